"""Issue #37: the trusted compile cache (grader.checking.compile_cache). Filled only by the grader
from the course's own sources, copied into each trusted grading's own CuPy cache, never shown to
a sandbox; on a GPU, a grading seeded from it compiles only the student's kernel, same verdict."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from grader.checking import compile_cache

CUBIN = "0123456789abcdef0123456789abcdef01234567.cubin"
RELEASE = [dict(kind="locked", grade_id="setup", points=0, source="from grader import grade"),
           dict(kind="answer", grade_id="sgemm-tiled-kernel", points=0, source='SRC_TILED = r"""..."""'),
           dict(kind="test", grade_id="sgemm-tiled-test", points=2, source='grade("sgemm-tiled", SRC_TILED, points=2, tile=32)'),
           dict(kind="test", grade_id="python-test", points=1, source="assert True\n1.0")]


def test_only_cupys_cubins_are_copied_and_nothing_when_off(tmp_path, monkeypatch):
    store, dest = tmp_path / "store", tmp_path / "scratch" / "cupy"
    store.mkdir()
    (store / CUBIN).write_bytes(b"cubin")
    (store / "notes.txt").write_text("not a cubin")
    (store / "filled-sgemm-tiled").write_text("marker")
    outside = tmp_path / "secret"
    outside.write_text("the answer key")
    os.symlink(outside, store / ("f" * 40 + ".cubin"))  # a link named like a cubin: never followed
    monkeypatch.delenv(compile_cache.ENV, raising=False)
    assert compile_cache.seed(dest) == 0 and not dest.exists()
    monkeypatch.setenv(compile_cache.ENV, str(store))
    assert compile_cache.seed(dest) == 1
    assert sorted(os.listdir(dest)) == [CUBIN] and (dest / CUBIN).read_bytes() == b"cubin"


def test_without_a_gpu_the_fill_compiles_nothing_and_is_not_retried(tmp_path, monkeypatch):
    store = tmp_path / "store"
    monkeypatch.setenv(compile_cache.ENV, str(store))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # a GPU machine's test run too: the fill sees none
    said = compile_cache.ensure(["sgemm-tiled", "sgemm-naive"])
    assert "no GPU" in said and "0 compiled kernel(s) kept" in said, said
    assert not [p for p in store.iterdir() if p.name.endswith(".cubin") or p.name.startswith("new-")]
    assert (store / "filled-sgemm-tiled").exists() and oct(store.stat().st_mode & 0o777) == "0o700"
    t0 = time.monotonic()
    assert compile_cache.ensure(["sgemm-tiled"]) == "ready" and time.monotonic() - t0 < 0.5  # no process


def test_autograde_fills_for_its_kernel_exercises_then_seeds(tmp_path, monkeypatch):
    from grader.classroom.autograde import TrustedGrade

    store = tmp_path / "store"
    store.mkdir()
    (store / CUBIN).write_bytes(b"cubin")
    asked = []
    monkeypatch.setattr(compile_cache, "ensure", lambda exercises: asked.append(exercises) or "ready")
    monkeypatch.delenv(compile_cache.ENV, raising=False)
    dest = tmp_path / "scratch" / "cupy"
    assert TrustedGrade()._compile_cache(dict(release=RELEASE), str(dest)) is None and asked == []
    monkeypatch.setenv(compile_cache.ENV, str(store))
    assert TrustedGrade()._compile_cache(dict(release=RELEASE), str(dest)) == 1
    assert asked == [["sgemm-tiled"]] and (dest / CUBIN).exists()


def test_no_sandbox_sees_the_cache(tmp_path, monkeypatch):
    from grader.runtime import sandbox

    if sandbox.tool() is None:
        pytest.skip("no bwrap here")
    store = tmp_path / "store"
    store.mkdir()
    (store / CUBIN).write_bytes(b"cubin")
    monkeypatch.setenv(compile_cache.ENV, str(store))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    compile_cache.seed(scratch / "cupy")  # what the trusted grader's sandbox gets: its own copy
    probe = 'if [ -e "$0" ]; then echo seen; else echo hidden; fi; ls "$1"'
    with sandbox.Box(writable=[scratch]) as box:
        r = subprocess.run(box.argv(["sh", "-c", probe, str(store), str(scratch / "cupy")]),
                           capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["hidden", CUBIN], r.stdout


@pytest.mark.gpu
def test_on_a_gpu_a_seeded_grading_compiles_only_the_students_kernel(tmp_path, monkeypatch):
    """The reference of sgemm-tiled fills the cache; a student's kernel (the reference with a
    comment: a source of its own) graded with a seeded CuPy cache writes one new cubin, its own;
    unseeded, it writes that and every kernel of the frame. Same score both ways."""
    from grader.runtime import kernels

    store = tmp_path / "store"
    monkeypatch.setenv(compile_cache.ENV, str(store))
    said = compile_cache.ensure(["sgemm-tiled"])
    kept = [p for p in store.iterdir() if p.name.endswith(".cubin")]
    assert "references checked on the GPU: sgemm-tiled" in said and len(kept) >= 5, said
    student = "// a student's copy\n" + kernels.source("sgemm_tiled")
    code = ("import sys; from grader.checking.check import check; "
            "v = check('sgemm-tiled', sys.stdin.read(), backend='gpu', tile=32); print(v.score)")
    got = {}
    for name in ("seeded", "cold"):
        cache = tmp_path / name
        if name == "seeded":
            compile_cache.seed(cache)
        cache.mkdir(exist_ok=True)
        before = set(os.listdir(cache))
        t0 = time.monotonic()
        r = subprocess.run([sys.executable, "-c", code], input=student, capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, CUPY_CACHE_DIR=str(cache)))
        assert r.returncode == 0, r.stderr[-2000:]
        got[name] = (float(r.stdout.split()[-1]), len(set(os.listdir(cache)) - before), time.monotonic() - t0)
    print(f"seeded: {got['seeded']}, cold: {got['cold']} (score, new cubins, seconds)")
    assert got["seeded"][0] == got["cold"][0]
    assert got["seeded"][1] == 1 and got["cold"][1] > 1, got
