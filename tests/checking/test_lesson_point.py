"""Without a GPU the lesson's point is visible: naive and tiled kernels of notebooks 01 and 03 get
CPU verdicts that differ in what they report, with numbers the emulator observed (issue 25)."""
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from grader.checking.check import check
from grader.checking.lesson_point import NAME, NOT_YET
from grader.emu.traffic import measure

if shutil.which("g++") is None:  # pragma: no cover
    pytest.skip("the CPU emulator needs g++", allow_module_level=True)

KERNELS = Path(__file__).resolve().parents[2] / "kernels"


def _src(name):
    return (KERNELS / f"{name}.cu").read_text()


def _traffic_item(v):
    items = [i for i in v.items if i.name == NAME]
    assert len(items) == 1, v.text()
    return items[0]


def _score(v):
    return v.score


@pytest.fixture(scope="module")
def transposes():
    conflicted = _src("transpose_tiled").replace("tile[TILE_DIM][TILE_DIM + 1]", "tile[TILE_DIM][TILE_DIM]")
    return {name: check("transpose", src, backend="emu") for name, src in
            (("naive", _src("transpose_naive")), ("tiled", _src("transpose_tiled")), ("conflicted", conflicted))}


def test_naive_transpose_is_told_its_writes_are_uncoalesced(transposes):
    v = transposes["naive"]
    item = _traffic_item(v)
    assert item.message.startswith(NOT_YET) and "writes are not coalesced" in item.message
    assert "32 sectors" in item.message and "where 4 would" in item.message  # the numbers
    assert "line 25" in item.message  # the student's store line
    assert NOT_YET in v.headline  # said plainly, up front
    assert v.score == 1.0  # never changes the score: correctness earns its point


def test_tiled_transpose_is_told_it_does_what_the_lesson_is_about(transposes):
    item = _traffic_item(transposes["tiled"])
    assert item.message.startswith("as the lesson intends")
    assert "no bank conflicts" in item.message and "global stores: 4.0 sectors" in item.message
    assert "reads and writes coalesced (4 and 4 sectors" in item.message
    assert NOT_YET not in transposes["tiled"].headline


def test_unpadded_tile_is_told_its_bank_conflicts(transposes):
    item = _traffic_item(transposes["conflicted"])
    m = re.search(r"(\d+)-way bank conflicts \(line (\d+)", item.message)
    assert m and int(m[1]) >= 8, item.message  # column reads of [32][32] floats: one bank per warp request
    assert "pad each row" in item.message


def test_verdicts_differ_in_what_they_report(transposes):
    a, b = (_traffic_item(transposes[k]).message for k in ("naive", "tiled"))
    assert a != b and "32.0 sectors" in a and "32.0 sectors" not in b


@pytest.fixture(scope="module")
def sgemms():
    return {k: check("sgemm-tiled", _src(f"sgemm_{k}"), backend="emu") for k in ("naive", "tiled")}


def test_naive_sgemm_submitted_as_tiled_is_told_it_never_stages_tiles(sgemms):
    item = _traffic_item(sgemms["naive"])
    assert item.message.startswith(NOT_YET)
    assert "loaded 64 times" in item.message and "N/TILE = 2" in item.message
    assert "never uses shared memory" in item.message


def test_tiled_sgemm_reports_its_reuse(sgemms):
    item = _traffic_item(sgemms["tiled"])
    assert item.message.startswith("as the lesson intends")
    assert "'A': each element loaded 2.0 times" in item.message


def test_traffic_counts_bank_ways_and_sectors_exactly():
    """The view's own numbers on kernels whose traffic is known by hand."""
    src = r"""extern "C" __global__ void k(const float* in, float* out, int stride) {
        __shared__ float s[32 * 32];
        s[threadIdx.x * stride] = in[threadIdx.x * stride];  // stride 1: 1 sector-group, no conflict
        __syncwarp();
        out[threadIdx.x] = s[threadIdx.x * stride];
    }"""
    for stride, sectors, ways in ((1, 4, 1), (2, 8, 2), (32, 32, 32)):
        t = measure(src, "k", (1,), (32,), [np.ones(32 * 32, np.float32), np.zeros(32, np.float32), stride])
        assert t.sectors_per_request(write=False) == sectors
        assert t.bank_ways() == ways


@pytest.mark.parametrize("layout,ways", [(0, 8), (1, 1), (2, 1)])
def test_ldmatrix_bank_conflicts_of_notebook_10s_layouts(layout, ways):
    """Plain rows 128 bytes apart: the 8 rows of one 8x8 matrix in the same banks, 8 passes; padded
    and XOR-swizzled: one (kernels/ldmatrix_layouts.cu, and the H100's 7.2x in RESULTS-mma.md). Lanes
    run in any order on the emulator: a request's phases are taken by lane number."""
    src = _src("ldmatrix_layouts").replace("reinterpret_cast<unsigned char*>(tile)",
                                           "reinterpret_cast<unsigned char*>(&tile[0])")  # a checked array
    t = measure(src, "ldsm_layout", (1,), (64,), [np.ones(64 * 64, np.float16), np.zeros(64, np.uint32), 2],
                options=[f"-DLAYOUT={layout}"])
    assert t.bank_ways(write=False) == ways
