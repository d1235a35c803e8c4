"""grader.bench.crosscheck: the emulator-vs-GPU comparison of issue #4.

On CPU: every case of every item is correct on the emulator (so a GPU run that disagrees
points at a real fidelity gap, not at a broken case), every kernel file is covered, and the
comparison flags what it should. On a GPU: the comparison itself."""
import numpy as np
import pytest

from grader.bench import crosscheck as X
from grader.problems.kinds import Expected
from grader.runtime import kernels


def test_every_kernel_file_is_cross_checked():
    covered = {i.file for i in X.ITEMS}
    assert covered == {p.stem for p in kernels.all_files()}


@pytest.mark.parametrize("item", X.ITEMS, ids=lambda i: i.name)
def test_every_case_is_right_on_the_emulator(item):
    if item.gpu_only:
        pytest.skip(f"GPU only: {item.gpu_only}")
    rows = X.cross_check([item], backends=("emu", "emu"), progress=None)
    assert rows
    for r in rows:
        assert r["agree"] and r["identical"] == 1.0, r  # deterministic: the same bits twice
        if r["first_vs_ref"] is not None and item.file != "fragment_illegal_op":
            assert r["first_vs_ref"] <= 1.0, r


def test_gpu_only_items_are_those_the_emulator_refuses():
    """An item may skip the emulator only when the emulator cannot compile its kernel (wgmma/TMA),
    and the CPU run of the cross-check then has nothing to say about it."""
    from grader.emu import compile_module
    from grader.runtime.errors import Unsupported

    gpu_only = [i for i in X.ITEMS if i.gpu_only]
    assert [i.file for i in gpu_only] == ["hgemm_wgmma", "mma_gemm_tma", "mma_gemm_tma_persistent",
                                          "conv2d_wgmma_tma", "tma_im2col_probe", "fp8_gemm_wgmma"]
    for item in gpu_only:
        with pytest.raises(Unsupported):
            compile_module(kernels.source(item.file), options=item.options)
        assert X.cross_check([item], backends=("emu", "emu"), progress=None) == []


def test_illegal_op_guess_is_wrong_and_portable_is_right():
    item = next(i for i in X.ITEMS if i.file == "fragment_illegal_op")
    rows = {r["case"]: r for r in X.cross_check([item], backends=("emu", "emu"), progress=None)}
    assert rows["add_bias_guess"]["first_vs_ref"] > 1
    assert rows["add_bias_portable"]["first_vs_ref"] <= 1 and rows["add_bias_positional"]["first_vs_ref"] <= 1


def test_compare_flags_differences_beyond_the_bound():
    ref = np.zeros((4, 4))
    e = Expected(ref, np.full((4, 4), 1e-3))
    a = np.zeros((4, 4), np.float32)
    b = a.copy()
    b[1, 2] = 5e-4  # inside the bound: agree, not identical
    r = X.compare(a, b, e)
    assert r.ok and r.identical == 15 / 16 and 0.4 < r.worst_ratio < 0.6
    b[3, 3] = 2e-3  # outside
    r = X.compare(a, b, e)
    assert not r.ok and r.n_bad == 1 and r.worst_ratio > 1
    b[3, 3] = np.nan  # a NaN on one side never agrees
    assert not X.compare(a, b, e).ok


def test_compare_exact_outputs_need_equal_bits():
    e = Expected(np.zeros(8), 0.0, exact=True)
    a = np.arange(8, dtype=np.int32)
    assert X.compare(a, a.copy(), e).ok
    b = a.copy()
    b[5] = -1
    assert not X.compare(a, b, e).ok


@pytest.mark.gpu
def test_emulator_agrees_with_the_gpu():
    rows = X.cross_check(progress=None)
    bad = [r for r in rows if not r["agree"]]
    assert not bad, X.table(bad)
