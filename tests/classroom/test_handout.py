"""The student copy (python -m grader.classroom.handout): no solutions/, no git history, no
instructor tests or course folder, no graded exercise's reference kernel, no lesson kernel that
holds a graded exercise's answer or is a near-copy of one by the course's similarity measure; the
notebooks and the grader stay so students can work and check, and the lessons load their kernels
(or say why one is not there). The copy is marked HANDOUT, and releasing refuses while the Colab
cell would clone anything else (an instructor's fork, run through real nbgrader)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_colab_setup import fork_of_this_tree

from grader.classroom import handout


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    import os

    out = tmp_path_factory.mktemp("handout") / "course"
    env = {**os.environ, "TC_HANDOUT_RECORD": str(out.parent / "record.json")}  # not this repository's record
    run = subprocess.run([sys.executable, "-m", "grader.classroom.handout", str(out)], capture_output=True,
                         text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stderr
    return out


def test_the_copy_holds_no_answer_key(copy):
    for left_out in ("solutions", "tests", "course", ".git"):
        assert not (copy / left_out).exists(), left_out
    refs = handout.graded_references()
    assert "kernels/wmma_gemm_naive.cu" in refs and "kernels/mma_gemm_tuned.cu" in refs
    for f in refs:  # a stub that says why, not the kernel
        assert (copy / f).read_text().startswith("#error") and "not in the student copy" in (copy / f).read_text()
    assert handout.leaks(copy) == []
    assert "solutions/" in (copy / "HANDOUT.md").read_text()
    assert handout.marker_problem(copy) is None  # marked as what the handout command wrote


def test_the_marker_tells_a_changed_copy(copy, tmp_path):
    changed = tmp_path / "c"
    shutil.copytree(copy, changed)
    assert handout.marker_problem(changed) is None
    (changed / "kernels" / "wmma_gemm_naive.cu").write_text((handout.ROOT / "kernels" / "wmma_gemm_naive.cu").read_text())
    assert "changed since" in handout.marker_problem(changed)
    (changed / "HANDOUT").unlink()
    assert "no HANDOUT marker" in handout.marker_problem(changed)


def test_a_lesson_rung_that_holds_an_answer_is_left_out(copy):
    # notebook 06's cp.async rung holds every line of wmma-gemm-fast's solution regions
    assert (copy / "kernels" / "wmma_gemm_async.cu").read_text().startswith("#error")
    assert "wmma_gemm_async.cu" in (copy / "HANDOUT.md").read_text()
    kept, _ = handout.selection(handout.tracked_files(), keep_rungs=True)
    assert "kernels/wmma_gemm_async.cu" in kept and "kernels/wmma_gemm_swizzle.cu" not in kept


def test_the_copy_is_still_a_course(copy):
    assert (copy / "notebooks" / "04-wmma-basics" / "04-wmma-basics.ipynb").is_file()
    assert (copy / "grader" / "checking" / "check.py").is_file()
    assert not (copy / "kernels" / "wmma_gemm_fragdb.cu").read_text().startswith("#error")  # a lesson kernel


def test_leaks_finds_a_planted_answer(copy, tmp_path):
    planted = tmp_path / "c"
    shutil.copytree(copy, planted)
    text = (handout.ROOT / "kernels" / "wmma_gemm_any_size.cu").read_text()
    (planted / "notebooks" / "notes.md").write_text("my notes\n" + text)
    (planted / "solutions").mkdir()
    found = handout.leaks(planted)
    assert "solutions" in found and any(x.startswith("notebooks/notes.md holds") for x in found)


# ---- near-copies by the course's similarity measure (issue 33, item 8) -----------------------

def near_copy(code: str) -> str:
    """What a lesson author (or a student) might leave: every declared name renamed, the code
    re-indented and spread out. No line of it is a line of the original."""
    import re

    names = set(re.findall(r"\b(?:int|half|float|auto|size_t|unsigned)\s*\*?\s+([A-Za-z_]\w*)", code))
    for n in sorted(names, key=len, reverse=True):
        code = re.sub(rf"\b{n}\b", f"{n.lower()}_v2", code)
    out = []
    for ln in code.splitlines():
        body = ln.lstrip(" ")
        out.append("\t" * ((len(ln) - len(body)) // 4) + re.sub(r"\s*([=+*/<>-]=?)\s*", r" \1 ", body))
        if body.endswith(";"):
            out.append("")
    return "\n".join(out) + "\n"


def graded_answer(notebook: str, name: str) -> str:
    """A graded kernel answer as a student hands it in: the solution's kernel, markers dropped."""
    import re

    from grader.classroom.similarity import kernels_in

    code = kernels_in(handout.ROOT / "solutions" / notebook / f"{notebook}.ipynb")[name]
    return "\n".join(ln for ln in code.splitlines() if not re.search(r"//\s*(BEGIN|END) SOLUTION", ln))


def run_in(fork: Path, *args, env_extra=None, cwd=None):
    import os

    env = {**os.environ, "PYTHONPATH": str(fork), "TC_HANDOUT_RECORD": str(fork.parent / "handout-record.json"),
           "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"], **(env_extra or {})}
    env.pop("TC_SOURCE_DIR", None)
    return subprocess.run([sys.executable, *args], cwd=cwd or fork, env=env, capture_output=True, text=True,
                          timeout=600)


@pytest.fixture(scope="module")
def fork(tmp_path_factory):
    """An instructor's fork of this tree, with a near-copy of 06's graded answer planted as a
    lesson kernel (tracked, as a lesson kernel would be)."""
    f = fork_of_this_tree(tmp_path_factory.mktemp("fork") / "repo")
    (f / "kernels" / "lesson_planted.cu").write_text(near_copy(graded_answer("06-fast-wmma-gemm", "SRC_FAST")))
    subprocess.run(["git", "add", "kernels/lesson_planted.cu"], cwd=f, check=True)
    return f


def test_a_renamed_reindented_near_copy_is_left_out(fork, tmp_path):
    planted = (fork / "kernels" / "lesson_planted.cu").read_text()
    assert handout.held(planted, handout.answers()) == [], "the line-exact rule alone would keep it"
    out = tmp_path / "h"
    run = run_in(fork, "-m", "grader.classroom.handout", str(out))
    assert run.returncode == 0, run.stderr[-3000:]
    assert (out / "kernels" / "lesson_planted.cu").read_text().startswith("#error")
    listed = (out / "HANDOUT.md").read_text()
    line = next(ln for ln in listed.splitlines() if "lesson_planted.cu" in ln)
    score = float(__import__("re").search(r"06-fast-wmma-gemm:SRC_FAST \(similarity ([\d.]+)\)", line)[1])
    assert handout.NEAR_COPY <= score <= 1.0, line


def test_every_lesson_kernel_left_out_is_listed_with_its_score(copy):
    from grader.classroom.similarity import answer_share

    listed = (copy / "HANDOUT.md").read_text()
    key = handout.graded_answers()
    refs = set(handout.graded_references())
    for p in sorted((handout.ROOT / "kernels").glob("*.cu")):
        f = f"kernels/{p.name}"
        if f in refs:
            continue
        top = answer_share(p.read_text(), key)
        stubbed = (copy / f).read_text().startswith("#error")
        if top and top[0][1] >= handout.NEAR_COPY:  # by the measure, computed here again
            assert stubbed and f"{top[0][0]} (similarity {top[0][1]:.2f})" in listed, (f, top[0])
        elif not handout.held(p.read_text(), handout.answers()):
            assert not stubbed, (f, top[:1])
    # the lesson kernels the line rule kept and the measure does not (0.54-0.81 of an answer)
    for f in ("tf32_gemm_naive", "wmma_gemm_colmajor", "wmma_gemm_smem", "conv2d_direct_tiled"):
        assert (copy / "kernels" / f"{f}.cu").read_text().startswith("#error"), f


def test_lessons_still_load_their_kernels_in_the_copy(copy):
    """Every kernel of the copy a lesson loads compiles there, or stops with its #error's reason
    (what the lesson cell then shows), through the copy's own grader (NVRTC, no GPU needed)."""
    code = r'''
import json
from grader.runtime import kernels
from grader.runtime.compile import nvrtc_compile
out = {}
for p in kernels.all_files():
    try:
        nvrtc_compile(kernels.source(p.stem), arch=90)
        out[p.name] = "ok"
    except Exception as e:
        out[p.name] = str(e)
print(json.dumps(out))
'''
    import json
    import os

    def compiled(where):
        run = subprocess.run([sys.executable, "-c", code], cwd=where, env={**os.environ, "PYTHONPATH": str(where)},
                             capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stderr[-3000:]
        return json.loads(run.stdout.strip().splitlines()[-1])

    got, course = compiled(copy), compiled(handout.ROOT)
    assert set(got) == set(course)
    for name, res in got.items():
        if (copy / "kernels" / name).read_text().startswith("#error"):
            assert "is not in the student copy of the course" in res, (name, res[:300])
        else:  # as in the course (hgemm_wgmma, say, says it needs sm_90a there too)
            assert res == course[name], (name, res[:300])
    assert "ok" in got.values()


# ---- the handout repository the Colab cell clones (issue 33, item 6) -------------------------
def _set_repositories(fork: Path, own: str, handout_repo: str) -> None:
    import re

    py = fork / "pyproject.toml"
    text = re.sub(r'(?m)^repository = ".*"$', f'repository = "{own}"', py.read_text())
    py.write_text(re.sub(r'(?m)^handout-repository = ".*"$', f'handout-repository = "{handout_repo}"', text))


def _release(fork: Path) -> subprocess.CompletedProcess:
    return run_in(fork, "-m", "nbgrader", "generate_assignment", "02-precision", "--force", cwd=fork / "course")


def test_release_refuses_a_colab_cell_that_would_clone_the_answer_key(fork, tmp_path):
    own = "https://github.com/acme/tensorcores"
    (fork.parent / "handout-record.json").unlink(missing_ok=True)  # no handout built here yet
    # the handout setting names the course's own repository (another spelling of it)
    _set_repositories(fork, own, "git@github.com:Acme/tensorcores.git")
    r = _release(fork)
    assert r.returncode != 0 and "the course's own repository" in r.stdout + r.stderr, (r.stdout + r.stderr)[-3000:]
    assert not (fork / "course" / "release" / "02-precision" / "02-precision.ipynb").exists()
    # a repository of its own, but no handout built for it
    students = "https://github.com/acme/tensorcores-students"
    _set_repositories(fork, own, students)
    r = _release(fork)
    assert r.returncode != 0 and "no handout has been built here" in r.stdout + r.stderr, (r.stdout + r.stderr)[-3000:]
    # the guide's steps: sync the notebooks, build the handout (push it), release
    out = tmp_path / "students"
    stale = run_in(fork, "-m", "grader.classroom.handout", str(tmp_path / "stale"))
    assert stale.returncode == 1 and "notebooks sync" in stale.stderr, stale.stderr[-2000:]
    assert run_in(fork, "-m", "grader.classroom.notebooks", "sync").returncode == 0
    built = run_in(fork, "-m", "grader.classroom.handout", str(out))
    assert built.returncode == 0, built.stderr[-3000:]
    assert json_of(out / "HANDOUT")["repository"] == students
    r = _release(fork)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    import nbformat

    cell = nbformat.read(fork / "course" / "release" / "02-precision" / "02-precision.ipynb", as_version=4).cells[0]
    assert students in cell.source and f'"{own}"' not in cell.source
    # the copy the record names no longer a clean handout: refused again
    shutil.copytree(fork / "solutions", out / "solutions")
    r = _release(fork)
    assert r.returncode != 0 and "holds solutions/" in r.stdout + r.stderr, (r.stdout + r.stderr)[-3000:]


def json_of(p: Path) -> dict:
    import json

    return json.loads(p.read_text())


@pytest.mark.slow
def test_a_lesson_notebook_of_the_copy_runs_past_a_left_out_kernel(copy, monkeypatch):
    """Notebook 04 of the copy, run top to bottom on its own grader: the cell that loads the
    column-major lesson kernel (left out, a near-copy of 04's answers) stops with its #error's
    reason, and every other cell runs as in the course."""
    import os
    import tempfile

    import nbformat
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    assert (copy / "kernels" / "wmma_gemm_colmajor.cu").read_text().startswith("#error")
    path = copy / "notebooks" / "04-wmma-basics" / "04-wmma-basics.ipynb"
    nb = nbformat.read(path, as_version=4)
    monkeypatch.setenv("PYTHONPATH", str(copy))  # the kernel imports the copy's grader, as a student's would
    km = KernelManager(kernel_name="python3", transport="ipc",
                       ip=os.path.join(tempfile.gettempdir(), f"tc-kernel-{os.getpid()}"))
    NotebookClient(nb, km=km, timeout=600, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    ran = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.get("execution_count") for c in ran), "a cell did not run"
    errors = {i: "\n".join(o.get("traceback", [])) + o.get("evalue", "") for i, c in enumerate(ran)
              if "raises-exception" not in c.metadata.get("tags", [])
              for o in c.get("outputs", []) if o.get("output_type") == "error"}
    assert errors, "the column-major cell should stop with the stub's reason"
    for i, text in errors.items():
        assert "not in the student copy of the course" in text, (i, ran[i].source[:200], text[-800:])
    assert any("colmajor" in ran[i].source for i in errors)
