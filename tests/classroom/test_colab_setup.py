"""The Colab setup cell, for real, in a fresh virtual environment: a stand-in `google.colab`
module, the course cloned from a local git copy of this tree, and a stand-in nvidia-smi for
Colab's T4 (driver for CUDA 12.4), or none (a CPU runtime). What it must do: install the grader
and the right CUDA stack into the running Python, switch on the widget manager, say what it
did; run again, install nothing. This also proves that each stack resolves, installs and
imports from scratch (CuPy for CUDA 12 with NVRTC 12.4; the CUDA 13 set)."""
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

from fake_driver import fake_smi

ROOT = Path(__file__).resolve().parents[2]


def first_cell(notebook: str = "notebooks/00-setup/00-setup.ipynb") -> str:
    return nbformat.read(ROOT / notebook, as_version=4).cells[0].source


def git_commit_all(src: Path) -> Path:
    """`src` as a git repository on branch main with everything in it committed."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    for cmd in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"], ["git", "commit", "-q", "-m", "course"]):
        subprocess.run(cmd, cwd=src, check=True, env=env, capture_output=True)
    return src


def fork_of_this_tree(src: Path) -> Path:
    """This working tree (what git tracks or would) as a git repository: an instructor's fork,
    solutions/ and all."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split("\0")
    for f in filter(None, files):
        if (ROOT / f).is_file():
            (src / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / f, src / f)
    return git_commit_all(src)


@pytest.fixture(scope="module")
def course_git(tmp_path_factory) -> Path:
    """The handout of this working tree as a git repository to clone (what GitHub would serve
    from the handout repository): what the Colab cell clones."""
    from grader.classroom import handout

    out = tmp_path_factory.mktemp("course-src") / "handout"
    handout.build(out)
    return git_commit_all(out)


def stub_colab(where: Path) -> Path:
    """google.colab with output.enable_custom_widget_manager(), which leaves a mark."""
    pkg = where / "google" / "colab"
    pkg.mkdir(parents=True)
    (where / "google" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("from google.colab import output\n")
    (pkg / "output.py").write_text(textwrap.dedent("""\
        import os
        def enable_custom_widget_manager():
            open(os.environ["TC_TEST_WIDGET_MARK"], "w").write("on")
        """))
    return where


def run_cell(venv_python: Path, tmp: Path, course_git: Path, gpu: bool) -> subprocess.CompletedProcess:
    """The notebook's first cell in a Python where google.colab is imported, as in Colab."""
    bin_dir = tmp / "bin"
    if gpu:
        fake_smi(bin_dir, "550.54.15", "12.4", "Tesla T4", "7.5")
    path = [str(bin_dir)] + [d for d in os.environ["PATH"].split(os.pathsep) if not (Path(d) / "nvidia-smi").exists()]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TC_", "PYTHON", "VIRTUAL_ENV"))}
    env.update(PATH=os.pathsep.join(path), TC_COURSE_HOME=str(tmp / "content" / "tensorcore-course"),
               TC_COURSE_GIT=str(course_git), TC_TEST_WIDGET_MARK=str(tmp / "widgets"), HOME=str(tmp))
    code = f"import sys; sys.path.insert(0, {str(tmp / 'stub')!r}); import google.colab\n" + first_cell()
    return subprocess.run([str(venv_python), "-c", code], capture_output=True, text=True, env=env, cwd=tmp,
                          timeout=900)


def fresh_venv(tmp: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(tmp / "venv")], check=True)
    stub_colab(tmp / "stub")
    return tmp / "venv" / "bin" / "python"


def in_venv(py: Path, code: str, tmp: Path) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TC_", "PYTHON", "VIRTUAL_ENV"))}
    r = subprocess.run([str(py), "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                       cwd=tmp, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def test_the_first_cell_is_the_colab_cell_everywhere():
    from grader.classroom import notebooks
    from grader.classroom.colab import CELL

    for src in notebooks.sources():
        student = notebooks.STUDENT / src.relative_to(notebooks.SOLUTIONS)
        cell = nbformat.read(student, as_version=4).cells[0]
        assert cell.id == "colab-setup" and cell.source.endswith(CELL), student


def test_readme_opens_every_notebook_in_colab():
    from grader.classroom import notebooks
    from grader.classroom.colab import colab_url, readme_links

    readme = (ROOT / "README.md").read_text()
    for src in notebooks.sources():
        rel = (notebooks.STUDENT / src.relative_to(notebooks.SOLUTIONS)).relative_to(ROOT).as_posix()
        assert f"({colab_url(rel)})" in readme, f"README has no Colab link for {rel}"
    assert readme_links(readme) == readme, "stale Colab links: python -m grader.classroom.colab readme"


def test_the_cell_keeps_no_clone_of_a_repository_with_the_answer_key(tmp_path):
    """Pointed at an instructor's fork (solutions/, no HANDOUT marker), the cell stops, saying
    so, and leaves no clone behind; it never reaches the setup."""
    fork = fork_of_this_tree(tmp_path / "fork")
    stub_colab(tmp_path / "stub")
    home = tmp_path / "content" / "tensorcore-course"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TC_", "PYTHON", "VIRTUAL_ENV"))}
    env.update(TC_COURSE_HOME=str(home), TC_COURSE_GIT=str(fork), HOME=str(tmp_path))
    code = f"import sys; sys.path.insert(0, {str(tmp_path / 'stub')!r}); import google.colab\n" + first_cell()
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
                       timeout=300)
    assert r.returncode != 0 and "is not the course's student handout" in r.stderr, r.stderr[-2000:]
    assert not home.exists()
    assert "course setup:" not in r.stdout


def test_the_cell_clones_the_handout_repository():
    from grader.classroom.colab import HANDOUT_REPOSITORY, REPOSITORY

    cell = first_cell()
    assert HANDOUT_REPOSITORY in cell and REPOSITORY not in cell.replace(HANDOUT_REPOSITORY, "")


def test_outside_colab_the_cell_does_nothing(tmp_path):
    r = subprocess.run([sys.executable, "-c", first_cell()], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0 and r.stdout == "" and not (tmp_path / "content").exists()


@pytest.mark.slow
@pytest.mark.parametrize("gpu", [True, False], ids=["T4-driver-12.4", "no-GPU"])
def test_colab_setup_in_a_fresh_venv(tmp_path, course_git, gpu):
    py = fresh_venv(tmp_path)
    first = run_cell(py, tmp_path, course_git, gpu)
    assert first.returncode == 0, first.stdout + first.stderr[-3000:]
    out = first.stdout
    want = "cuda12" if gpu else "cuda13"
    assert f"CUDA {want[-2:]} stack" in out and "installed the course" in out, out
    assert (tmp_path / "widgets").read_text() == "on" and "widget manager on" in out
    assert "ready" in out and "NOT READY" not in out, out
    assert "emulator:" in out  # no GPU, or a T4: the emulator runs what needs sm_80
    # a new process (a grading child, a restarted kernel) sees the course and exactly one stack
    got = in_venv(py, """
        import cupy, grader
        from grader.runtime import stack, nvrtc, kernels
        from grader.runtime.compile import nvrtc_compile
        print(stack.installed(), nvrtc.available()[0].version, grader.__file__)
        for arch in ((70, 75, 80) if stack.in_use().name == "cuda12" else (75, 80, 90)):
            out = nvrtc_compile(kernels.source("wmma_one_tile"), arch=arch)  # a lesson kernel of the handout
            assert out.uses_tensor_cores and out.nvrtc == nvrtc.available()[0].version, arch
        print("compiled")
        """, tmp_path)
    ver = "(12, 4)" if gpu else "(13, 0)"
    assert f"['{want}'] {ver}" in got and "compiled" in got, got
    assert str(tmp_path / "content" / "tensorcore-course" / "grader") in got
    # idempotent: the second run checks and installs nothing
    second = run_cell(py, tmp_path, course_git, gpu)
    assert second.returncode == 0 and "already set up: nothing to install" in second.stdout, second.stdout
    assert "installed the course" not in second.stdout
