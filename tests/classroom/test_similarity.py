"""The instructor's similarity report (grader/classroom/similarity.py), run as the guide says on
a cohort of 30 submissions: renamed copies of the course's reference found, the untouched
release not, under a minute."""
from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from grader.classroom import similarity

A = "04-wmma-basics"
ROOT = Path(__file__).resolve().parents[2]

# written from scratch, the same job as the reference (one warp per tile), another shape of code
INDEPENDENT = r'''
#include <mma.h>
#include <cuda_fp16.h>
extern "C" __global__ void wmma_gemm(const half* A, const half* B, float* C, int M, int N, int K)
{
    using namespace nvcuda::wmma;
    const int tileRow = blockIdx.x, tileCol = blockIdx.y;
    fragment<accumulator, 16, 16, 16, float> sum;
    fill_fragment(sum, 0.0f);
    for (int kk = 0; kk * 16 < K; kk++) {
        fragment<matrix_a, 16, 16, 16, half, row_major> fa;
        fragment<matrix_b, 16, 16, 16, half, row_major> fb;
        load_matrix_sync(fa, A + (size_t)tileRow * 16 * K + kk * 16, K);
        load_matrix_sync(fb, B + (size_t)kk * 16 * N + tileCol * 16, N);
        mma_sync(sum, fa, fb, sum);
    }
    store_matrix_sync(C + (size_t)tileRow * 16 * N + tileCol * 16, sum, N, mem_row_major);
}
'''


def _renamed(nb):
    for c in nb.cells:
        c.source = re.sub(r"\bacc\b", "total", c.source).replace("warpM", "wm").replace("warpN", "wn")
    return nb


@pytest.fixture(scope="module")
def cohort(tmp_path_factory):
    course = tmp_path_factory.mktemp("similar")
    release = nbformat.read(ROOT / "notebooks" / A / f"{A}.ipynb", as_version=4)
    (course / "release" / A).mkdir(parents=True)
    nbformat.write(release, course / "release" / A / f"{A}.ipynb")
    kinds = {}
    for i in range(30):
        nb = nbformat.read(ROOT / "solutions" / A / f"{A}.ipynb", as_version=4)
        kind = ("copy", "renamed", "release", "independent")[i % 4]
        if kind == "renamed":
            nb = _renamed(nb)
        elif kind == "release":
            nb = nbformat.read(ROOT / "notebooks" / A / f"{A}.ipynb", as_version=4)
        elif kind == "independent":
            nb = nbformat.read(ROOT / "notebooks" / A / f"{A}.ipynb", as_version=4)
            i0 = next(j for j, c in enumerate(nb.cells) if "SRC_WMMA" in c.source and '"""' in c.source)
            nb.cells[i0].source = f'SRC_WMMA = r"""{INDEPENDENT}"""\n'
        student = f"s{i:02d}"
        kinds[student] = kind
        d = course / "submitted" / student / A
        d.mkdir(parents=True)
        nbformat.write(nb, d / f"{A}.ipynb")
    t0 = time.perf_counter()
    # the guide's command, in the course folder
    run = subprocess.run([sys.executable, "-m", "grader.classroom.similarity", A], cwd=course,
                         capture_output=True, text=True, timeout=300)
    seconds = time.perf_counter() - t0
    assert run.returncode == 0, run.stderr
    subs, boiler, unreadable = similarity.collect(course, A)
    assert not unreadable, unreadable
    pairs = similarity.compare(subs, similarity.references(), boiler)
    return dict(course=course, seconds=seconds, kinds=kinds, pairs=pairs, out=Path(run.stdout.strip()))


def _best(pairs, student, answer, against):
    return max((p.score for p in pairs if p.a.owner == student and p.a.name == answer and against(p.b.owner)),
               default=0.0)


def test_thirty_submissions_in_under_a_minute(cohort):
    assert cohort["seconds"] < 60
    assert cohort["out"] == cohort["course"] / f"similarity-{A}.html"
    page = cohort["out"].read_text()
    assert "kernels/wmma_gemm_naive.cu" in page and "<mark>" in page


def test_renamed_copy_of_the_reference_is_found(cohort):
    renamed = next(s for s, k in cohort["kinds"].items() if k == "renamed")
    assert _best(cohort["pairs"], renamed, "SRC_WMMA", lambda o: o.endswith("wmma_gemm_naive.cu")) >= 0.9


def test_an_independent_kernel_scores_below_a_copy_and_the_stub_is_no_similarity(cohort):
    indep = next(s for s, k in cohort["kinds"].items() if k == "independent")
    copy = next(s for s, k in cohort["kinds"].items() if k == "copy")
    ref = lambda o: o.startswith("course:")  # noqa: E731
    assert _best(cohort["pairs"], indep, "SRC_WMMA", ref) < 0.75 <= _best(cohort["pairs"], copy, "SRC_WMMA", ref)
    stub = next(s for s, k in cohort["kinds"].items() if k == "release")
    others = lambda o: cohort["kinds"].get(o) == "release"  # noqa: E731
    assert _best(cohort["pairs"], stub, "SRC_WMMA", others) < 0.5


# ---------------------------------------------------------------- hand-ins the report cannot read
def _hostile(release) -> dict[str, str]:
    """student -> the text of a notebook the report must not choke on (issue #32)."""
    import json

    data = json.loads(nbformat.writes(release))
    code = next(c for c in data["cells"] if c["cell_type"] == "code")

    def with_cell(src: str) -> str:
        return json.dumps(dict(data, cells=data["cells"] + [dict(code, source=src, outputs=[])]))

    return {
        "nested-deep": json.dumps(data)[:-1] + ', "x": ' + "[" * 100_000 + "]" * 100_000 + "}",
        "nbformat-99": json.dumps(dict(data, nbformat=99)),
        "not-json": json.dumps(data)[:1000],
        "huge": json.dumps(dict(data, metadata={"blob": "x" * ((similarity.READ_MB + 1) << 20)})),
        # constants the notebook never computes (after a raise), which a reader might fold
        "tower": with_cell("raise SystemExit\nX = ((9 ** 4096) ** 4096) ** 4096\nY = 1 << (1 << 33)\n"),
        "long-kernel": with_cell('SRC_BIG = r"""__global__ void k() {}\n' + "int x;\n" * 40_000 + '"""\n'),
    }


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    import resource

    course = tmp_path_factory.mktemp("similar-hostile")
    release = nbformat.read(ROOT / "notebooks" / A / f"{A}.ipynb", as_version=4)
    (course / "release" / A).mkdir(parents=True)
    nbformat.write(release, course / "release" / A / f"{A}.ipynb")
    for i in range(4):  # honest hand-ins: copies of the solution, compared as ever
        d = course / "submitted" / f"ok{i}" / A
        d.mkdir(parents=True)
        nbformat.write(nbformat.read(ROOT / "solutions" / A / f"{A}.ipynb", as_version=4), d / f"{A}.ipynb")
    bad = _hostile(release)
    for student, text in bad.items():
        d = course / "submitted" / student / A
        d.mkdir(parents=True)
        (d / f"{A}.ipynb").write_text(text)
    t0 = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "grader.classroom.similarity", A], cwd=course,
                         capture_output=True, text=True, timeout=600)
    rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return dict(course=course, run=run, seconds=time.perf_counter() - t0, rss_mb=rss_mb, bad=bad)


def test_hand_ins_it_cannot_read_are_listed_and_the_rest_compared(hostile):
    run = hostile["run"]
    assert run.returncode == 0, run.stderr[-3000:]
    page = (hostile["course"] / f"similarity-{A}.html").read_text()
    listed = page.split("Not compared", 1)[1].split("<table>", 1)[0]
    for student in ("nested-deep", "nbformat-99", "not-json", "huge", "long-kernel"):
        assert f"{student} ({A}.ipynb)" in listed, (student, listed)
    assert "nbformat 99" in listed and "nested deeper" in listed and "characters" in listed
    assert "ok0" in page.split("<table>", 1)[1] and "kernels/wmma_gemm_naive.cu" in page  # the class is compared


def test_constants_in_a_hand_in_are_never_computed(hostile):
    """The tower and the shift after a raise are refused by size, not computed: the report ends
    in seconds and its processes stay small (they took 1148 MB and no end before)."""
    assert hostile["seconds"] < 60, hostile["seconds"]
    assert hostile["rss_mb"] < 1024, hostile["rss_mb"]
    assert "tower" not in hostile["run"].stderr  # read like any other hand-in
