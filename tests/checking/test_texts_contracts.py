"""What the notebooks say agrees with the contracts the grader enforces and with their own numbers
(issue 25): the speed measure of sgemm-tiled, the grid convention of 03 and 04, the threshold units
of `grader list`, 10 as the advanced notebook, and 03's claim about caches against its own data."""
import json
import subprocess
import sys
from pathlib import Path

from grader.checking import exercises

ROOT = Path(__file__).resolve().parents[2]


def _md(nb: str) -> str:
    cells = json.loads((ROOT / "solutions" / nb).read_text())["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


def test_03_states_the_tiled_speed_measure_of_the_contract():
    text, ex = _md("03-cuda-core-gemm/03-cuda-core-gemm.ipynb"), exercises.get("sgemm-tiled")
    assert "naive kernel" in ex.contract
    assert "speed as a ratio to cuBLAS" not in text and "ratio to cuBLAS fp32 at 4096" not in text
    assert f"{ex.floor:g}×" in text and f"{ex.target:g}×" in text  # the thresholds, in the units explained


def test_grid_convention_said_where_it_changes():
    t3, t4 = _md("03-cuda-core-gemm/03-cuda-core-gemm.ipynb"), _md("04-wmma-basics/04-wmma-basics.ipynb")
    assert "columns" in exercises.get("sgemm-tiled").contract or "threadIdx.x along the columns" in \
        exercises.get("sgemm-naive").contract
    assert "blockIdx.x and threadIdx.x run along the columns of C" in t3
    assert "blockIdx.x along the rows" in exercises.get("wmma-gemm").contract
    assert "blockIdx.x runs along the *rows* of C" in t4 and "notebook 03" in t4
    assert "blockIdx.x along the columns" in exercises.get("wmma-gemm-fast").contract


def test_10_says_it_is_the_advanced_notebook():
    assert "advanced notebook" in _md("10-beyond-wmma/10-beyond-wmma.ipynb")


def test_03_cache_claim_agrees_with_its_own_data():
    """03 says caches do most of the naive kernel's work: its measured rate must be well above what
    8 bytes per 2 flops from memory allows at the copy bandwidth the same run measured."""
    data = json.loads((ROOT / "kernels" / "capstone-results-nvidia-h200.json").read_text())["roofline"]
    naive = next(k for k in data["kernels"] if k["kernel"] == "sgemm_naive")
    tflops = naive["flops"] / (naive["ms"] * 1e-3) / 1e12
    memory_only = data["copy_gbs"] * 1e9 * (2 / 8) / 1e12
    assert tflops > 3 * memory_only
    text = _md("03-cuda-core-gemm/03-cuda-core-gemm.ipynb")
    assert "Caches do most of the naive kernel's work" in text and "a little" not in text


def test_grader_list_explains_threshold_units():
    out = subprocess.run([sys.executable, "-m", "grader", "list"], capture_output=True, text=True, timeout=120).stdout
    line = next(ln for ln in out.splitlines() if ln.startswith("sgemm-tiled"))
    assert "its time / yours" in line and "1.05x" in line and "1.25x" in line


def test_03_tile_picture_names_the_block_as_cuda_does():
    """block (1, 2) in (row, col) order read as blockIdx (1, 2), the other block, in 03's grid."""
    import matplotlib

    matplotlib.use("Agg")
    from grader.lessons import cuda_gemm

    title = cuda_gemm.tile_picture(4, 12, 12, 12, 1, 2, 1)._suptitle.get_text()
    assert "(blockIdx.x, blockIdx.y) = (2, 1)" in title and "tile row 1, column 2" in title
