"""Issue #37: a lesson cell's speed demo measures nothing while nbgrader autogrades, says so in
one line, and hands its cell what the notebook shows without a GPU (a recorded run), so the
cell draws as it would; a student or lecturer gets the measurement as before."""
from __future__ import annotations

import sys

import pytest

from grader.lessons import cuda_gemm, fast_gemm, fp8_speed, measuring


@pytest.fixture
def autograde(monkeypatch):
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    # a measurement would import CuPy and reach for a GPU: none may be touched
    monkeypatch.setitem(sys.modules, "cupy", None)


def test_the_ladder_is_not_measured_under_autograde(autograde, capsys):
    rows = cuda_gemm.measure_ladder(4096, extra={"yours: naive": ("not even CUDA", None)})
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "not measured while nbgrader autogrades" in out[0] and "recorded on" in out[0]
    assert rows == cuda_gemm.recorded_ladder()[0] and rows
    # what notebook 03's GPU branch reads of it is there (its last row the library)
    assert rows[-1]["kernel"] == "cuBLAS fp32" and any(r["kernel"] == "tiled 32" for r in rows)
    assert all("gflops" in r and "ratio" in r for r in rows)


def test_the_tuning_sweep_is_not_measured_under_autograde(autograde, capsys):
    rows = fast_gemm.sweep()
    assert rows == fast_gemm.recorded_sweep(4096) and len(capsys.readouterr().out.strip().splitlines()) == 1


@pytest.mark.parametrize("module", ["fast_gemm", "beyond_wmma"])
def test_timing_the_students_kernel_is_one_line_under_autograde(autograde, module, capsys):
    import importlib

    from grader.runtime.device import NotHere

    lesson = importlib.import_module(f"grader.lessons.{module}")
    with pytest.raises(NotHere) as e:  # the notebook's cell prints it: `except X.NotHere as e: print(e)`
        lesson.time_student("not even CUDA")
    assert "not measured while nbgrader autogrades" in str(e.value) and capsys.readouterr().out == ""


def test_the_fp8_pairings_are_not_measured_under_autograde(autograde, capsys):
    """Notebook 11's live cell timed four FP8 pairings at 2048^3 in every hand-in's notebook run
    on an sm_89+ GPU, where no grade reads them: now one line."""
    lines = fp8_speed.measure_here(2048)
    assert len(lines) == 1 and "not measured while nbgrader autogrades" in lines[0], lines
    assert capsys.readouterr().out == ""


def test_elsewhere_the_demos_measure(monkeypatch, capsys):
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    assert not measuring.skip("anything") and capsys.readouterr().out == ""
    monkeypatch.setenv("NBGRADER_EXECUTION", "validate")  # nbgrader's other runs are not autograde
    assert not measuring.skip("anything")
    monkeypatch.setitem(sys.modules, "cupy", None)  # so measuring is tried: here it needs CuPy
    monkeypatch.delenv("NBGRADER_EXECUTION")
    with pytest.raises(ImportError):
        cuda_gemm.measure_ladder(64)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["03-cuda-core-gemm", "06-fast-wmma-gemm", "08-convolution", "10-beyond-wmma",
                                  "11-fp8-sparsity"])
def test_on_a_gpu_an_autograded_notebook_skips_its_demos_and_runs_on(name, monkeypatch, tmp_path):
    """The GPU branch of the notebook's demo cells, as nbgrader autograde runs it: one line each,
    the recorded run drawn, no cell in error (what the formgrader shows the instructor)."""
    import os

    import nbformat
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    from grader.classroom import notebooks

    path = notebooks.ROOT / "solutions" / name / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4)
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")  # the notebook's kernel inherits it
    km = KernelManager(kernel_name="python3", transport="ipc", ip=str(tmp_path / "kernel"))
    NotebookClient(nb, km=km, timeout=600, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    demos = [c for c in nb.cells if c.cell_type == "code" and any(
        k in c.source for k in ("measure_ladder(", "F.sweep()", "time_student(", "time_layers(", "measure_here("))]
    outs = [o for c in demos for o in c.get("outputs", [])]
    assert demos and not [o for o in outs if o.get("output_type") == "error"], os.linesep.join(
        f"{o.get('ename')}: {o.get('evalue')}" for o in outs if o.get("output_type") == "error")
    said = [o for o in outs if "not measured while nbgrader autogrades" in o.get("text", "")]
    assert len(said) == len(demos) and all(o["text"].count("not measured") == 1 for o in said), said
