"""Add an exercise the way CONTRIBUTING.md's recipe ("A graded exercise") says, in a throwaway copy
of the repository, and grade it (issue 34: "a test adds a throwaway exercise that way and runs it
through `check` and a real nbgrader autograde").

Two exercises, each exactly three hand-written things and then `notebooks sync`:
- `hgemm-naive`, correctness only: a naive fp16-in, fp32-out GEMM on CUDA cores, in notebook 04;
- `sgemm-tiled-2`, speed-graded: a tiled SGEMM with floor, target, slow_hint and previous, in notebook 03.
Then: `notebooks check` passes, `python -m grader check` passes the reference and fails a broken one,
the guard tests pass in the copy, and nbgrader (the course's dry run) gives each new graded cell its
points for the solution and 0 for the untouched release. Leaving out one of the three parts makes a
guard fail, saying what to add.

The copy runs this checkout's .venv python with the copy first on PYTHONPATH and as the working
folder, so the copy's `grader` package is the one imported (checked), in the grading processes too.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell

from grader.classroom import workflow as classroom
from test_readme_commands import _fresh_clone


@dataclass(frozen=True)
class NewExercise:
    id: str
    file: str  # kernels/<file>.cu
    kernel: str  # step 1: the file
    record: str  # step 2: the Exercise(...) added to EXERCISES
    notebook: str  # step 3: solutions/<notebook>/<notebook>.ipynb ...
    after: str  # ... after the cell with this grade id
    var: str
    points: int  # the graded cell's
    cpu_points: float  # what grading without a GPU awards it: the correctness share
    launch: str = ""  # launch keywords of check() and grade(), e.g. ", tile=32"


HGEMM = NewExercise(
    id="hgemm-naive", file="hgemm_naive", notebook="04-wmma-basics", after="wmma-gemm-test", var="SRC_HGEMM",
    points=1, cpu_points=1,
    kernel=r'''/*
 * hgemm_naive: C = A * B on CUDA cores, A and B fp16, C fp32, all row-major and contiguous.
 * A is M x K, B is K x N, C is M x N. One thread per element of C, as sgemm_naive.cu; each
 * product is formed and accumulated in fp32, as the tensor cores of this notebook do.
 *
 * Launch: block (16, 16), grid (ceil(N / 16), ceil(M / 16)). Any M, N, K >= 1.
 * Check:  python -m grader check hgemm-naive kernels/hgemm_naive.cu
 */
#include <cuda_fp16.h>

extern "C" __global__ void hgemm(const half* A, const half* B, float* C, int M, int N, int K)
{
    // BEGIN SOLUTION (about 7 lines)
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc += __half2float(A[row * K + k]) * __half2float(B[k * N + col]);
    C[row * N + col] = acc;
    // END SOLUTION
}
''',
    record='''    Exercise(
        "hgemm-naive", "Naive HGEMM on CUDA cores", "hgemm",
        P.Gemm("float16", "float32", launch_rule="naive16", baseline=None), "hgemm_naive",
        "C = A B, A and B fp16, C fp32, row-major. block (16, 16), grid (ceil(N/16), ceil(M/16)), "
        "threadIdx.x along the columns of C. Any M, N, K >= 1.",
        cpu_sizes=(_g(33, 17, 9), _g(64, 64, 64)), gpu_sizes=(_g(1000, 777, 333), _g(1024, 1024, 1024)),
        hint_family="gemm"),
''')

TILED_2 = NewExercise(
    id="sgemm-tiled-2", file="sgemm_tiled_2", notebook="03-cuda-core-gemm", after="sgemm-tiled-test",
    var="SRC_TILED_2", points=2, cpu_points=1, launch=", tile=32",
    kernel="",  # the tiled SGEMM's file under another name (see _kernel_text)
    record='''    Exercise(
        "sgemm-tiled-2", "Shared-memory tiled SGEMM, again", "sgemm",
        P.Gemm("float32", "float32", launch_rule="tile", baseline="sgemm-naive"), "sgemm_tiled_2",
        "As sgemm-tiled: block (T, T), grid (ceil(N/T), ceil(M/T)), T = -DTILE. Any M, N, K >= 1.",
        cpu_sizes=(_g(33, 47, 40), _g(96, 128, 8)), gpu_sizes=(_g(1000, 777, 333), _g(2048, 2048, 2048)),
        perf_size=_g(4096, 4096, 4096), launch_defaults=dict(tile=32), floor=1.05, target=1.25, ceiling=15.0,
        points_speed=1.0, race_check=True,
        slow_hint="Load each tile of A and B into shared memory once per block, and read it TILE times.",
        hint_family="gemm", coach_sections=COACH_SGEMM, previous="sgemm_naive"),
''')


def _kernel_text(copy: Path, ex: NewExercise) -> str:
    if ex.kernel:
        return ex.kernel
    text = (copy / "kernels" / "sgemm_tiled.cu").read_text()
    return text.replace("sgemm_tiled:", f"{ex.file}:", 1).replace(
        "check sgemm-tiled kernels/sgemm_tiled.cu", f"check {ex.id} kernels/{ex.file}.cu")


def add(copy: Path, ex: NewExercise, *, kernel=True, record=True, block=True) -> None:
    """The recipe's three hand-written parts, each as a contributor writes it."""
    if kernel:  # 1. kernels/<file>.cu
        (copy / "kernels" / f"{ex.file}.cu").write_text(_kernel_text(copy, ex))
    if record:  # 2. one Exercise(...) in EXERCISES, the registry's list (a text edit, at its end)
        registry = copy / "grader" / "checking" / "exercises.py"
        text = registry.read_text()
        end = text.index("\n]}\n", text.index("EXERCISES: dict[str, Exercise]")) + 1
        registry.write_text(text[:end] + ex.record + text[end:])
    if block:  # 3. the notebook block: a markdown cell, then four code cells
        path = copy / "solutions" / ex.notebook / f"{ex.notebook}.ipynb"
        nb = nbformat.read(path, as_version=4)
        at = 1 + next(i for i, c in enumerate(nb.cells)
                      if c.metadata.get("nbgrader", {}).get("grade_id") == ex.after)

        def nbgrader(**kw):
            return {"nbgrader": {"schema_version": 3, "grade": False, "solution": False, "locked": False, **kw}}

        nb.cells[at:at] = [
            new_markdown_cell(f"### Exercise `{ex.id}`\n\nWrite the kernel's body."),
            new_code_cell(f'ex = exercises.get("{ex.id}")\nprint(ex.signature)\nprint(ex.contract)'),
            new_code_cell(f'# kernel: {ex.file}\n{ex.var} = r"""\n"""',
                          metadata=nbgrader(solution=True, grade_id=f"{ex.id}-kernel")),
            new_code_cell(f'check("{ex.id}", {ex.var}{ex.launch})'),
            new_code_cell(f'# graded\ngrade("{ex.id}", {ex.var}, points={ex.points}{ex.launch})',
                          metadata=nbgrader(grade=True, locked=True, points=ex.points, grade_id=f"{ex.id}-test")),
        ]
        nbformat.write(nb, path)  # as Jupyter saves it


def _env(copy: Path) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "TC_SOURCE_DIR", "VIRTUAL_ENV", "PYTHONPATH"))}
    env["PYTHONPATH"] = str(copy)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")  # nbgrader's alembic
    return env


def run(copy: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """`python ARGS` in the copy, its grader package first on the path."""
    return subprocess.run([sys.executable, *args], cwd=copy, env=_env(copy), capture_output=True, text=True,
                          timeout=timeout)


def guard_tests(copy: Path, *args: str) -> subprocess.CompletedProcess:
    """pytest ARGS in the copy, its quick tests only."""
    return run(copy, "-m", "pytest", *args, "-m", "not slow", "-p", "no:cacheprovider")


def new_copy(tmp_path_factory, name: str) -> Path:
    copy = _fresh_clone(tmp_path_factory.mktemp(name) / "course")
    where = run(copy, "-c", "import grader; print(grader.__file__)")
    assert where.stdout.strip() == str(copy / "grader" / "__init__.py"), where.stdout + where.stderr
    return copy


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A copy with both exercises added by the recipe, synced."""
    copy = new_copy(tmp_path_factory, "add-exercise")
    for ex in (HGEMM, TILED_2):
        add(copy, ex)
    sync = run(copy, "-m", "grader.classroom.notebooks", "sync")
    assert sync.returncode == 0, sync.stdout + sync.stderr
    return copy, sync.stdout


def test_sync_writes_every_derived_file(course):
    copy, said = course
    for ex in (HGEMM, TILED_2):
        for folder in ("solutions", "notebooks"):
            assert f"wrote {folder}/{ex.notebook}/{ex.notebook}.ipynb" in said, said
        student = nbformat.read(copy / "notebooks" / ex.notebook / f"{ex.notebook}.ipynb", as_version=4)
        stub = next(c for c in student.cells if c.source.startswith(f"# kernel: {ex.file}\n"))
        assert "YOUR CODE HERE" in stub.source and "BEGIN SOLUTION" not in stub.source
        solution = nbformat.read(copy / "solutions" / ex.notebook / f"{ex.notebook}.ipynb", as_version=4)
        cell = next(c for c in solution.cells if c.source.startswith(f"# kernel: {ex.file}\n"))
        code = cell.source.split('r"""', 1)[1].rsplit('"""', 1)[0]  # written in from the .cu file
        assert "// BEGIN SOLUTION" in code and (copy / "kernels" / f"{ex.file}.cu").read_text().endswith(code.lstrip())
        row = next(line for line in (copy / "README.md").read_text().splitlines()
                   if line.startswith(f"| {ex.notebook[:2]} "))
        assert f"`{ex.id}`" in row
    assert "wrote README.md" in said and "wrote course/README.md" in said
    check = run(copy, "-m", "grader.classroom.notebooks", "check")
    assert check.returncode == 0, check.stdout + check.stderr


def test_check_passes_the_reference_and_fails_a_broken_kernel(course):
    copy, _ = course
    ok = run(copy, "-m", "grader", "check", HGEMM.id, f"kernels/{HGEMM.file}.cu", "--backend", "emu")
    assert ok.returncode == 0 and f"{HGEMM.id}: PASSED (1/1 points)" in ok.stdout, ok.stdout + ok.stderr
    broken = copy / "broken.cu"
    broken.write_text(HGEMM.kernel.replace("B[k * N + col]", "B[col * K + k]"))  # B read transposed
    bad = run(copy, "-m", "grader", "check", HGEMM.id, str(broken), "--backend", "emu")
    assert bad.returncode == 1 and re.search(r"\[FAIL\] correct", bad.stdout), bad.stdout + bad.stderr


def test_the_speed_graded_record_is_accepted_and_its_speed_needs_a_gpu(course):
    import json

    copy, _ = course
    listing = run(copy, "-m", "grader", "list")
    assert re.search(rf"^{TILED_2.id}\s+\(2 points; ", listing.stdout, re.M), listing.stdout
    got = run(copy, "-m", "grader", "check", TILED_2.id, f"kernels/{TILED_2.file}.cu", "--backend", "emu",
              "--tile", "32", "--json")
    assert got.returncode == 0, got.stdout + got.stderr
    verdict = json.loads(got.stdout)
    assert verdict["passed"] and verdict["score"] == 1.0 and verdict["max_score"] == 2.0, verdict["headline"]
    speed = next(i for i in verdict["items"] if i["name"] == "speed")
    assert speed["status"] == "skip" and "needs a GPU" in speed["message"], speed
    # the coach's panel points where the record's coach_sections say (here notebook 03's sections)
    from grader.checking.exercises import COACH_SGEMM

    findings = verdict["coach"]["findings"]
    assert findings, verdict["coach"]
    for f in findings:
        assert f["section"].startswith(f"notebook {COACH_SGEMM[f['key']][0]} "), f


@pytest.mark.slow
def test_the_guard_tests_pass_in_the_copy(course):
    """What would catch a list still kept by hand (the registry's consumers, the notebooks' tables)."""
    copy, _ = course
    got = guard_tests(copy, "tests/checking/test_exercise_record.py", "tests/test_layering.py",
                      "tests/classroom/test_notebooks.py", "-v")
    assert got.returncode == 0, got.stdout[-4000:] + got.stderr[-2000:]
    for ex in (HGEMM, TILED_2):  # the record checks ran on the new records
        assert f"test_every_record_has_what_its_consumers_read[{ex.id}] PASSED" in got.stdout, got.stdout[-4000:]


@pytest.mark.slow
def test_leaving_a_part_out_fails_a_guard_that_says_what_to_add(tmp_path_factory):
    copy = new_copy(tmp_path_factory, "add-exercise-part")
    record_test = "tests/checking/test_exercise_record.py::test_every_exercise_is_graded_by_one_notebook_cell"
    before = {p: p.read_text() for p in (copy / "solutions" / HGEMM.notebook / f"{HGEMM.notebook}.ipynb",
                                         copy / "notebooks" / HGEMM.notebook / f"{HGEMM.notebook}.ipynb",
                                         copy / "README.md", copy / "course" / "README.md")}

    add(copy, HGEMM, record=False)  # the kernel and the notebook block, no record
    assert run(copy, "-m", "grader.classroom.notebooks", "sync").returncode == 0
    got = guard_tests(copy, record_test, "-q")
    assert got.returncode == 1 and 'grade("hgemm-naive", ...) names no exercise: add its Exercise(...) to ' \
        "grader/checking/exercises.py" in got.stdout, got.stdout[-3000:]

    for path, text in before.items():  # the block out (the notebooks as they were), the record in
        path.write_text(text)
    add(copy, HGEMM, kernel=False, block=False)
    assert run(copy, "-m", "grader.classroom.notebooks", "check").returncode == 0
    got = guard_tests(copy, record_test, "-q")
    assert got.returncode == 1 and "hgemm-naive: no solution notebook grades it: add its block to solutions/" \
        in got.stdout, got.stdout[-3000:]

    (copy / "kernels" / f"{HGEMM.file}.cu").unlink()  # the block back, the kernel file out
    add(copy, HGEMM, kernel=False, record=False)
    got = run(copy, "-m", "grader.classroom.notebooks", "sync")
    assert got.returncode == 1 and "a kernel cell names hgemm_naive.cu, which is not in" in got.stderr, got.stderr
    assert "Traceback" not in got.stderr


@pytest.mark.slow
def test_nbgrader_gives_the_new_cells_their_points(course, tmp_path):
    """The course's own dry run (release, autograde, feedback, export) of the two notebooks in the
    copy: each new graded cell scores its points (on a CPU, the correctness share) for the solution
    and 0 for the untouched release, graded by the copy's trusted grader."""
    copy, _ = course
    keep = tmp_path / "dry-run"
    got = run(copy, "-m", "grader.classroom", "dry-run", "03", "04", "--keep", str(keep), timeout=900)
    assert got.returncode == 0, got.stdout[-3000:] + got.stderr[-3000:]
    for ex in (TILED_2, HGEMM):
        solution = classroom.cell_scores(keep, ex.notebook, "solution")
        untouched = classroom.cell_scores(keep, ex.notebook, "untouched")
        assert solution[f"{ex.id}-test"] == pytest.approx(ex.points if _gpu() else ex.cpu_points), solution
        assert untouched[f"{ex.id}-test"] == 0, untouched
        graded = nbformat.read(keep / "autograded" / "solution" / ex.notebook / f"{ex.notebook}.ipynb", as_version=4)
        cell = next(c for c in graded.cells if c.metadata.get("nbgrader", {}).get("grade_id") == f"{ex.id}-test")
        html = cell.outputs[0]["data"]["text/html"]
        assert "trusted grader" in html and ex.id in html, html[:500]


def _gpu() -> bool:
    from grader.runtime.device import has_gpu

    return has_gpu()
