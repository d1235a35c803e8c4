"""The class workflow, end to end on CPU, in a temporary course: release every assignment,
autograde the solution (one student) and the untouched release (another), then a crashing,
a hanging and a skip-execution submission (trimmed to the cells grading reads: their other
cells must score what the whole solution does); feedback and export.

Autograding executes every notebook top to bottom, so this also proves the solutions and
the student copies run without errors outside the exercise cells.
"""
from pathlib import Path

import nbformat
import pytest

from grader.checking import exercises
from grader.classroom import graded_cells, notebook_file
from grader.classroom import workflow as classroom
from redteam import trim

pytestmark = pytest.mark.slow

ASSIGNMENTS = classroom.assignments()


def kernel_cells(nb):
    """[(solution cell index, variable, exercise id, graded cell index)] for each kernel exercise,
    read from the notebook's own cells (grader/classroom/graded_cells.py)."""
    index = {id(c): i for i, c in enumerate(nb.cells)}
    tests = [(j, ex, var) for j, c in enumerate(nb.cells) if graded_cells.is_test(c)
             for ex, var in graded_cells.grade_calls(c.source)]
    return [(index[id(c)], var, ex, j) for _, var, c in graded_cells.kernel_cells(nb)
            for j, ex, graded in tests if graded == var]


def replace_kernel(nb, index, var, body):
    ex_cell = nb.cells[index]
    ex_cell.source = f'# kernel: replaced by the test\n{var} = r"""\n{body}\n"""'


def adversarial_target():
    for a in ASSIGNMENTS:
        for sol in sorted((classroom.SOLUTIONS / a).glob("*.ipynb")):
            if len(kernel_cells(nbformat.read(sol, as_version=4))) >= 2:
                return a, sol
    return None, None


def _grade_all(root, student, pick):
    """Submit every assignment for `student`, then autograde them all in one nbgrader run."""
    for a in ASSIGNMENTS:
        classroom.submit(root, student, a, pick(a))
    classroom.autograde(root, "*", student)


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """Two course folders graded in parallel (one per core): `root` has alice (the solutions)
    and the adversarial submissions; `release_root` has bob (the untouched releases)."""
    from concurrent.futures import ThreadPoolExecutor

    root = classroom.new_course(tmp_path_factory.mktemp("class") / "course")
    broot = classroom.new_course(tmp_path_factory.mktemp("class") / "course")
    classroom.release_all(root)
    classroom.release_all(broot)
    with ThreadPoolExecutor(2) as pool:
        jobs = [pool.submit(_grade_all, root, "alice", lambda a: sorted((classroom.SOLUTIONS / a).glob("*.ipynb"))),
                pool.submit(_grade_all, broot, "bob", lambda a: sorted((broot / "release" / a).glob("*.ipynb")))]
        a, sol = adversarial_target()
        if a is not None:
            work = tmp_path_factory.mktemp("subs")
            nb = nbformat.read(sol, as_version=4)
            cells = kernel_cells(nb)
            (i0, v0, e0, g0), (i1, v1, e1, g1) = cells[0], cells[1]
            sig0, sig1 = exercises.get(e0).signature, exercises.get(e1).signature
            # carol: the first kernel crashes (a store to address 16), the rest is the solution.
            crash = nbformat.from_dict(nb)
            replace_kernel(crash, i0, v0, sig0 + "\n{\n    *(volatile float*)16 = 1.0f;\n}")
            # dave: the second kernel never returns.
            hang = nbformat.from_dict(nb)
            replace_kernel(hang, i1, v1, sig1 + "\n{\n    while (true) { }\n}")
            # erin: the first kernel is wrong and its graded cell is tagged to be skipped.
            skip = nbformat.from_dict(nb)
            replace_kernel(skip, i0, v0, sig0 + "\n{\n}")
            skip.cells[g0].metadata.setdefault("tags", []).append("skip-execution")
            subs = []
            for student, book in (("carol", crash), ("dave", hang), ("erin", skip)):
                path = work / student / sol.name
                path.parent.mkdir()
                notebook_file.write(trim(book), path)  # what grading reads (tests/redteam.py)
                subs.append((student, path))
        for j in jobs:
            j.result()
    if a is not None:
        for student, path in subs:
            classroom.submit(root, student, a, [path])
        classroom.autograde(root, a, "[cde]*")  # carol, dave, erin in one run
    # bob in the main course too, for one assignment, so the export lists two students
    first = ASSIGNMENTS[0]
    classroom.submit(root, "bob", first, sorted((root / "release" / first).glob("*.ipynb")))
    classroom.autograde(root, first, "bob")
    classroom.nbgrader(broot, "generate_feedback", "*", "--force")
    return dict(root=root, release_root=broot, adversarial=(a, sol))


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_solution_scores_what_cpu_grading_can_award(course, assignment):
    got, max_score = classroom.scores(course["root"], assignment)["alice"]
    expected = sum(classroom.cpu_max_score(p) for p in (classroom.SOLUTIONS / assignment).glob("*.ipynb"))
    assert got == pytest.approx(expected), classroom.cell_scores(course["root"], assignment, "alice")
    assert max_score >= expected


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_untouched_release_scores_zero(course, assignment):
    got, _ = classroom.scores(course["release_root"], assignment)["bob"]
    assert got == 0, classroom.cell_scores(course["release_root"], assignment, "bob")


def _errors(nb_path: Path):
    """Indices of cells whose outputs contain an error, with their nbgrader role."""
    nb = nbformat.read(nb_path, as_version=4)
    out = []
    for i, c in enumerate(nb.cells):
        if c.cell_type == "code" and any(o.get("output_type") == "error" for o in c.outputs):
            meta = c.metadata.get("nbgrader", {})
            out.append((i, "exercise" if (meta.get("solution") or meta.get("grade")) else "other"))
    return out


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_notebooks_run_top_to_bottom(course, assignment):
    for path in (course["root"] / "autograded" / "alice" / assignment).glob("*.ipynb"):
        assert _errors(path) == [], f"solution {path.name}: cells with errors"
    for path in (course["release_root"] / "autograded" / "bob" / assignment).glob("*.ipynb"):
        bad = [i for i, role in _errors(path) if role == "other"]
        assert bad == [], f"student copy {path.name}: cells outside exercises raise: {bad}"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_feedback_shows_the_graders_messages(course, assignment):
    pages = list((course["release_root"] / "feedback" / "bob" / assignment).glob("*.html"))
    assert pages, "no feedback generated"
    text = "".join(p.read_text() for p in pages)
    if any(classroom.cpu_max_score(p) for p in (classroom.SOLUTIONS / assignment).glob("*.ipynb")):
        assert "NOT YET" in text or "NotImplementedError" in text or "AssertionError" in text


def test_export_has_every_student(course):
    rows = classroom.export(course["root"])
    students = {r["student_id"] for r in rows}
    assert {"alice", "bob"} <= students
    assert {r["assignment"] for r in rows if r["student_id"] == "alice"} >= set(ASSIGNMENTS)
    alice = {r["assignment"]: float(r["raw_score"]) for r in rows if r["student_id"] == "alice"}
    for a in ASSIGNMENTS:
        assert alice[a] == pytest.approx(classroom.scores(course["root"], a)["alice"][0])


def _adversarial(course):
    a, sol = course["adversarial"]
    if a is None:
        pytest.skip("no assignment with two kernel exercises yet")
    nb = nbformat.read(sol, as_version=4)
    cells = kernel_cells(nb)
    ids = [nb.cells[g].metadata["nbgrader"]["grade_id"] for _, _, _, g in cells[:2]]
    solution = classroom.cell_scores(course["root"], a, "alice")
    return a, ids, solution


def test_crashing_kernel_costs_only_its_cell(course):
    a, (first, second), solution = _adversarial(course)
    got = classroom.cell_scores(course["root"], a, "carol")
    assert got[first] == 0
    assert {k: v for k, v in got.items() if k != first} == {k: v for k, v in solution.items() if k != first}


def test_hanging_kernel_costs_only_its_cell(course):
    a, (first, second), solution = _adversarial(course)
    got = classroom.cell_scores(course["root"], a, "dave")
    assert got[second] == 0
    assert {k: v for k, v in got.items() if k != second} == {k: v for k, v in solution.items() if k != second}


def test_skip_execution_tag_earns_nothing(course):
    a, (first, second), solution = _adversarial(course)
    got = classroom.cell_scores(course["root"], a, "erin")
    assert got[first] == 0, "a skip-execution tag let a wrong kernel keep its points"
    assert {k: v for k, v in got.items() if k != first} == {k: v for k, v in solution.items() if k != first}
