"""The student copy (python -m grader.classroom.handout): no solutions/, no git history, no
instructor tests or course folder, no graded exercise's reference kernel, no lesson kernel that
holds a graded exercise's answer; the notebooks and the grader stay so students can work and
check."""
from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from grader.classroom import handout


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    out = tmp_path_factory.mktemp("handout") / "course"
    run = subprocess.run([sys.executable, "-m", "grader.classroom.handout", str(out)], capture_output=True,
                         text=True, timeout=300)
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
