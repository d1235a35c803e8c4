"""Red team: submissions that try to take points they did not earn, autograded through the real
nbgrader pipeline on the CPU (emulator), with the course's config.

Every cheat starts from the untouched release (no exercise solved), so its honest score is 0:
each must still score 0. The cheats are graded in the red team's shared course (tests/redteam.py),
trimmed to the cells grading reads, as alice's solutions are there. The honest solution (alice) must keep full marks, and nothing a
cheater does may change alice's grade, her files, the gradebook's manual scores or the grader
package. GPU-only cheats (a kernel that skips work at the timed size, one that counts its
launches) are in the gpu-marked tests at the end.
"""
from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import nbformat
import pytest

from grader.classroom import workflow as classroom
from redteam import PACKAGE, add_code, answer_cell, dir_digest, graded_cells, kernel_var, require_sandbox

pytestmark = pytest.mark.slow  # one xdist work unit with the other red-team file (tests/conftest.py)

KERNELS_NB = "04-wmma-basics"  # kernel exercises only (what it grades is read from its solution)
PYTHON_NB = "01-memory-layout"  # Python answers (index functions) and a kernel

require_sandbox()


PASSING_VERDICT = """
import os
os.environ.pop("NBGRADER_EXECUTION", None)   # make the notebook's own check run, then rig it
"""

# A wrong kernel for the emulator that writes outside its sandbox: native code on the CPU.
EVIL_KERNEL = r'''
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;
extern "C" __device__ int open(const char*, int, ...);
extern "C" __device__ long write(int, const void*, unsigned long);
__device__ __attribute__((constructor)) static void tc_evil() {
    const char* targets[] = {"../../../gradebook.db", "TARGET_GRADEBOOK", "TARGET_GRADER"};
    for (int t = 0; t < 3; ++t) {
        int fd = open(targets[t], 01 | 0100 | 01000, 0644);   /* O_WRONLY | O_CREAT | O_TRUNC */
        if (fd >= 0) write(fd, "pwned", 5);
    }
}
extern "C" __global__ void wmma_gemm(const half* A, const half* B, float* C, int M, int N, int K)
{
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
    wmma::fill_fragment(c, 1.0f);
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
    wmma::load_matrix_sync(a, A, K);
    wmma::load_matrix_sync(b, B, N);
    wmma::mma_sync(c, a, b, c);
    wmma::store_matrix_sync(C + 16 * (blockIdx.x * N + blockIdx.y), c, N, wmma::mem_row_major);
}
'''

# Right on the emulator (a scalar loop), a do-nothing WMMA call where the GPU compiler looks.
EMU_DETECTING_KERNEL = r'''
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;
extern "C" __global__ void wmma_gemm(const half* A, const half* B, float* C, int M, int N, int K)
{
#if defined(__x86_64__)
    for (int r = 0; r < 16; ++r)
        for (int q = threadIdx.x; q < 16; q += 32) {
            int i = blockIdx.x * 16 + r, j = blockIdx.y * 16 + q;
            float s = 0.0f;
            for (int k = 0; k < K; ++k) s += __half2float(A[i * K + k]) * __half2float(B[k * N + j]);
            C[i * N + j] = s;
        }
#else
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
    wmma::fill_fragment(c, 0.0f);
    wmma::load_matrix_sync(a, A, K);
    wmma::load_matrix_sync(b, B, N);
    wmma::mma_sync(c, a, b, c);
    wmma::store_matrix_sync(C, c, N, wmma::mem_row_major);
#endif
}
'''


def _cheats(course: Path) -> dict[str, tuple[str, callable]]:
    """name -> (assignment, how to turn the release notebook into the cheat)."""
    gradebook = course / "gradebook.db"
    grader_file = PACKAGE / "checking" / "check.py"

    def redefine_grade(nb):
        add_code(nb, "def grade(*args, points=1, **kw):\n    return float(points)\n"
                     "def check(*args, **kw):\n    return None")

    def patch_check(nb):
        add_code(nb, PASSING_VERDICT + """
import grader, grader.checking.check as C
from grader.checking.verdict import Verdict
def _fake(exercise_id, source, **kw):
    v = Verdict(exercise_id, "emu", max_score=1.0)
    v.score = 1.0
    return v
C.check = _fake
grader.check = _fake
""")

    def patch_verdict(nb):
        add_code(nb, PASSING_VERDICT + """
from grader.checking.verdict import Verdict
Verdict.points = lambda self, points=None: float(points if points is not None else 1.0)
""")

    def gradebook_sql(nb):
        add_code(nb, f"""
import os, sqlite3
here = os.getcwd()
for db in [os.path.join(here, *([".."] * n), "gradebook.db") for n in range(6)] + [{str(gradebook)!r}]:
    try:
        con = sqlite3.connect(db)
        con.execute("UPDATE grade SET manual_score = 1000")
        con.commit()
    except Exception as e:
        print("no luck with", db, e)
""")

    def patch_numpy(nb):
        add_code(nb, PASSING_VERDICT + """
import numpy as np
np.allclose = lambda *a, **k: True
np.abs = lambda x, *a, **k: 0 * x
np.isfinite = lambda x, *a, **k: np.ones(np.shape(x), bool)
""")

    def os_exit(nb):
        add_code(nb, "import os\nos._exit(0)")

    def system_exit(nb):
        add_code(nb, "raise SystemExit(0)")

    def write_other_students(nb):
        add_code(nb, """
import glob, json, os
root = os.path.abspath(os.path.join(os.getcwd(), "..", "..", ".."))
for path in glob.glob(root + "/submitted/*/*/*.ipynb") + glob.glob(root + "/autograded/*/*/*.ipynb"):
    try:
        with open(path, "w") as f:
            f.write("{}")
    except Exception as e:
        print("no luck with", path, e)
""")

    def edit_grader_on_disk(nb):
        add_code(nb, f"""
try:
    with open({str(grader_file)!r}, "a") as f:
        f.write("\\ndef check(*a, **k):\\n    raise SystemExit\\n")
except Exception as e:
    print("read-only:", e)
""")

    def tamper_metadata(nb):
        # valid nbgrader metadata, wrong values: more points, unlocked tests
        for i in graded_cells(nb):
            nb.cells[i].metadata["nbgrader"].update(points=100, locked=False)

    def rename_test(nb):
        # a test cell under another id: the gradebook's test is missing, a stranger appears
        nb.cells[graded_cells(nb)[0]].metadata["nbgrader"]["grade_id"] = "free-points"

    def corrupt_metadata(nb):
        # metadata nbgrader itself would reject: repaired before it reads it, then graded (0 points)
        j = answer_cell(nb)
        nb.cells[j].metadata["nbgrader"] = dict(grade=True, points=100)

    def delete_tests(nb):
        for i in reversed(graded_cells(nb)):
            del nb.cells[i]

    def empty_tests(nb):
        for i in graded_cells(nb):
            nb.cells[i].source = "1.0"

    def skip_tag(nb):
        for i in graded_cells(nb):
            nb.cells[i].metadata.setdefault("tags", []).append("skip-execution")
            nb.cells[i].outputs = [nbformat.v4.new_output("execute_result", data={"text/plain": "1.0"},
                                                          execution_count=1)]

    def fake_verdict(nb):
        add_code(nb, 'from IPython.display import HTML, display\n'
                     'display(HTML("<b>PASSED (1/1 points)</b>"))\nprint("wmma-gemm: PASSED (1/1 points)")')
        for i in graded_cells(nb):
            nb.cells[i].outputs = [nbformat.v4.new_output("stream", name="stdout", text="PASSED (1/1 points)\n"),
                                   nbformat.v4.new_output("execute_result", data={"text/plain": "1.0"},
                                                          execution_count=1)]

    def read_solutions(nb):
        # the kernel text taken at run time from the instructor's source or the repository
        var = kernel_var(nb, answer_cell(nb))
        add_code(nb, f"""
import os
found, here = "", os.getcwd()
for up in range(8):   # the course and the repository lie somewhere above
    here = os.path.dirname(here)
    for rel in ("solutions/{KERNELS_NB}/{KERNELS_NB}.ipynb", "source/{KERNELS_NB}/{KERNELS_NB}.ipynb",
                "kernels/wmma_gemm_naive.cu", {str(PACKAGE.parent / "kernels" / "wmma_gemm_naive.cu")!r}):
        try:
            found = found or open(os.path.join(here, rel)).read()
        except Exception:
            pass
{var} = found if found.startswith("#") else {var}
""")

    def built_at_run_time(nb):
        var = kernel_var(nb, answer_cell(nb))
        add_code(nb, f"{var} = open({str(PACKAGE.parent / 'kernels' / 'wmma_gemm_naive.cu')!r}).read()")

    def evil_native_code(nb):
        i = answer_cell(nb)
        var = kernel_var(nb, i)
        src = EVIL_KERNEL.replace("TARGET_GRADEBOOK", str(gradebook)).replace("TARGET_GRADER", str(grader_file))
        nb.cells[i].source = f'# kernel: wmma_gemm_naive\n{var} = r"""{src}"""\n'

    def detects_emulator(nb):
        i = answer_cell(nb)
        nb.cells[i].source = f'# kernel: wmma_gemm_naive\n{kernel_var(nb, i)} = r"""{EMU_DETECTING_KERNEL}"""\n'

    def hard_coded_answers(nb):
        i = answer_cell(nb)
        nb.cells[i].source = (
            "TABLE = {(0, 0, 7): 0, (2, 3, 10): 23}\n"
            "def row_major_offset(i, j, ld):\n    return TABLE.get((i, j, ld), 0)\n"
            "def col_major_offset(i, j, ld):\n    return {(2, 3, 10): 32}.get((i, j, ld), 0)\n"
            "def byte_strides(shape, itemsize, order):\n"
            "    return {((3, 4), 4, 'C'): (16, 4), ((3, 4), 4, 'F'): (4, 12), ((2, 3, 4), 2, 'C'): (24, 8, 2),\n"
            "            ((2, 3, 4), 2, 'F'): (2, 4, 12)}.get((tuple(shape), itemsize, order), ())\n")

    def proxy_escape(nb):
        # a Python answer that tries to reach the grading process or the gradebook from its sandbox
        i = answer_cell(nb)
        nb.cells[i].source = (
            "import os, sqlite3, json\n"
            "def row_major_offset(i, j, ld):\n"
            "    for n in range(6):\n"
            "        try:\n"
            "            con = sqlite3.connect(os.path.join(*(['..'] * n), 'gradebook.db'))\n"
            "            con.execute('UPDATE grade SET manual_score = 1000'); con.commit()\n"
            "        except Exception:\n"
            "            pass\n"
            "    os.write(3, (json.dumps({'ok': 23}) + '\\n').encode())\n"
            "    return 0\n"
            "col_major_offset = row_major_offset\n"
            "def byte_strides(shape, itemsize, order):\n    os._exit(0)\n")

    return {
        "redefine-grade": (KERNELS_NB, redefine_grade),
        "patch-check": (KERNELS_NB, patch_check),
        "patch-verdict": (KERNELS_NB, patch_verdict),
        "gradebook-sql": (KERNELS_NB, gradebook_sql),
        "patch-numpy": (KERNELS_NB, patch_numpy),
        "os-exit": (KERNELS_NB, os_exit),
        "system-exit": (KERNELS_NB, system_exit),
        "write-other-students": (KERNELS_NB, write_other_students),
        "edit-grader": (KERNELS_NB, edit_grader_on_disk),
        "tamper-metadata": (KERNELS_NB, tamper_metadata),
        "corrupt-metadata": (KERNELS_NB, corrupt_metadata),
        "rename-test": (KERNELS_NB, rename_test),
        "delete-tests": (KERNELS_NB, delete_tests),
        "empty-tests": (KERNELS_NB, empty_tests),
        "skip-tag": (KERNELS_NB, skip_tag),
        "fake-verdict": (KERNELS_NB, fake_verdict),
        "read-solutions": (KERNELS_NB, read_solutions),
        "built-at-run-time": (KERNELS_NB, built_at_run_time),
        "evil-native-code": (KERNELS_NB, evil_native_code),
        "detects-emulator": (KERNELS_NB, detects_emulator),
        "hard-coded": (PYTHON_NB, hard_coded_answers),
        "proxy-escape": (PYTHON_NB, proxy_escape),
    }


CHEATS = list(_cheats(Path("/nonexistent")))


@pytest.fixture
def course(redteam):
    """The red team's shared course (tests/redteam.py): alice, every cheat here as cheat-NAME."""
    return redteam


@pytest.mark.parametrize("name", CHEATS)
def test_cheat_scores_zero(course, name):
    a = _cheats(course["root"])[name][0]
    got = classroom.scores(course["root"], a)
    assert f"cheat-{name}" in got, f"{name} was not graded"
    score, _ = got[f"cheat-{name}"]
    # metadata nbgrader would refuse (corrupt-metadata, rename-test) is repaired before it reads
    # it (grader/classroom/handin_check.py): every cheat here is graded
    assert (course["root"] / "autograded" / f"cheat-{name}" / a).is_dir(), f"{name}: nbgrader failed on it"
    assert score == 0, classroom.cell_scores(course["root"], a, f"cheat-{name}")


def test_honest_solution_keeps_full_marks(course):
    from grader.runtime.device import has_gpu

    for a in (KERNELS_NB, PYTHON_NB):
        got, max_score = classroom.scores(course["root"], a)["alice"]
        expected = max_score if has_gpu() else sum(
            classroom.cpu_max_score(p) for p in (classroom.SOLUTIONS / a).glob("*.ipynb"))
        assert got == pytest.approx(expected)
        assert classroom.cell_scores(course["root"], a, "alice") == course["before"][a]


@pytest.mark.parametrize("assignment", ["01-memory-layout", "02-precision", "04-wmma-basics", "05-fragment-probes"])
def test_trimmed_honest_solution_keeps_full_marks(course, assignment):
    """The cheats are handed in trimmed to what grading reads (tests/redteam.py): alice's
    solutions, trimmed the same way, keep every point, so trimming is never why a cheat scores 0."""
    assert assignment in course["assignments"]
    got, _ = classroom.scores(course["root"], assignment)["alice"]
    expected = sum(classroom.cpu_max_score(p) for p in (classroom.SOLUTIONS / assignment).glob("*.ipynb"))
    assert expected > 0 and got == pytest.approx(expected), classroom.cell_scores(course["root"], assignment, "alice")


def test_alice_was_graded_once(course):
    """The cheats' autograde run left alice's earlier grading alone (no --force)."""
    assert "Skipping existing assignment" in course["log"] and "/autograded/alice/" in course["log"]


def test_deleted_test_cells_are_graded_all_the_same(course):
    from grader.runtime.device import has_gpu

    got, max_score = classroom.scores(course["root"], KERNELS_NB)["cheat-honest-no-tests"]
    expected = max_score if has_gpu() else sum(
        classroom.cpu_max_score(p) for p in (classroom.SOLUTIONS / KERNELS_NB).glob("*.ipynb"))
    assert max_score == sum(_test_points(KERNELS_NB).values()) and expected > 0 and got == pytest.approx(expected)


def test_no_other_student_touched(course):
    for d, digest in course["alice_files"].items():
        assert dir_digest(course["root"] / d / "alice") == digest, f"alice's {d}/ folder changed"
    con = sqlite3.connect(course["root"] / "gradebook.db")
    assert con.execute("SELECT COUNT(*) FROM grade WHERE manual_score IS NOT NULL").fetchone()[0] == 0


def test_grader_package_unchanged(course):
    assert dir_digest(PACKAGE) == course["package"]


def _test_points(assignment: str) -> dict[str, float]:
    """{grade_id: points} of the assignment's test cells, read from its solution notebook."""
    return {c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"]["points"]
            for p in (classroom.SOLUTIONS / assignment).glob("*.ipynb")
            for c in nbformat.read(p, as_version=4).cells if c.metadata.get("nbgrader", {}).get("grade")}


def test_every_graded_cell_says_it_was_graded_by_the_trusted_grader(course):
    path = course["root"] / "autograded" / "cheat-tamper-metadata" / KERNELS_NB / f"{KERNELS_NB}.ipynb"
    nb = nbformat.read(path, as_version=4)
    graded = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
    points = _test_points(KERNELS_NB)
    assert {c.metadata["nbgrader"]["grade_id"] for c in graded} == set(points)
    for c in graded:
        assert "trusted grader" in c.outputs[0]["data"]["text/html"]
        assert c.metadata["nbgrader"]["points"] == points[c.metadata["nbgrader"]["grade_id"]]


def test_unreadable_source_says_how_to_write_it(course):
    path = course["root"] / "autograded" / "cheat-built-at-run-time" / KERNELS_NB / f"{KERNELS_NB}.ipynb"
    nb = nbformat.read(path, as_version=4)
    text = "".join(o.get("data", {}).get("text/plain", "") for c in nb.cells for o in c.get("outputs", [])
                   if c.metadata.get("nbgrader", {}).get("grade_id") == "wmma-gemm-test")
    assert "computed when the cell runs" in text and 'SRC = r"""' in text


def test_emulator_detection_is_named(course):
    path = course["root"] / "autograded" / "cheat-detects-emulator" / KERNELS_NB / f"{KERNELS_NB}.ipynb"
    nb = nbformat.read(path, as_version=4)
    text = json.dumps([c.get("outputs") for c in nb.cells])
    assert "__x86_64__" in text


# ---------------------------------------------------------------------------- GPU-only cheats

@pytest.mark.gpu
def test_kernel_that_skips_work_at_the_timed_size_scores_zero():
    """Correct at the correctness sizes, but when M >= 4096 (the timed size) it does 1/8 of the
    K loop: the output of the timed launches is checked, so it earns nothing."""
    from grader import check
    from grader.checking import exercises
    from grader.runtime import kernels

    ex = exercises.get("wmma-gemm-fast")
    src = kernels.source(ex.reference)
    cheat = _skip_k(src)
    assert cheat != src, "the reference kernel's K loop was not found: update the cheat"
    v = check("wmma-gemm-fast", cheat, **ex.launch_defaults)
    assert v.score == 0, v.text()
    assert any(i.kind == "wrong-when-timed" for i in v.items), v.text()
    honest = check("wmma-gemm-fast", src, **ex.launch_defaults)
    assert honest.score == ex.points, honest.text()


# the kernel's entry: extern "C" __global__ void [__launch_bounds__(...)] name(params) {
_ENTRY = re.compile(r'extern "C" __global__ void\s+(?:__launch_bounds__\([^)]*\)\s*)?\w+\([^)]*int K[^)]*\)\s*\{')


def _skip_k(src: str) -> str:
    """The reference with its K extent cut to K/8 when M >= 4096, at the kernel's entry."""
    m = _ENTRY.search(src)
    if not m:
        return src
    return src[:m.end()] + "\n    if (M >= 4096) K = K / 8;\n" + src[m.end():]


@pytest.mark.gpu
def test_kernel_that_counts_its_launches_scores_zero():
    """Right on its first launches, then skips the work: the verification launch after timing
    (into a poisoned output) catches it."""
    from grader import check
    from grader.checking import exercises
    from grader.runtime import kernels

    ex = exercises.get("wmma-gemm-fast")
    src = kernels.source(ex.reference)
    m = _ENTRY.search(src)
    cheat = (src[:m.start()] + "__device__ unsigned int tc_launches;\n" + src[m.start():m.end()] +
             "\n    if (M >= 4096) { if (threadIdx.x == 0 && blockIdx.x == 0 && blockIdx.y == 0) "
             "atomicAdd(&tc_launches, 1u); if (tc_launches > 3) return; }\n" + src[m.end():])
    v = check("wmma-gemm-fast", cheat, **ex.launch_defaults)
    assert v.score == 0, v.text()

